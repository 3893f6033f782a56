// Loaded with `node --import` into a service's process: says on stderr when a module of the
// OpenTelemetry SDK or BullMQ's add-on is first resolved, for the tests that check tracing costs
// nothing when it is off. @opentelemetry/api is not one: prom-client loads that façade in any case.
import module from 'node:module';

let told = false;
module.registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context);
    if (!told && /[\\/]node_modules[\\/](@opentelemetry[\\/](?!api[\\/])|bullmq-otel[\\/])/.test(resolved.url)) {
      told = true;
      process.stderr.write(`opentelemetry sdk loaded: ${resolved.url}\n`);
    }
    return resolved;
  },
});
