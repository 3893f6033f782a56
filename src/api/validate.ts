// Valibot validation for request bodies: the first message of each field becomes a form-style 400.
import * as v from 'valibot';
import { errors, type FieldErrors } from './api-errors.ts';

export function validate<const S extends v.GenericSchema>(schema: S, input: unknown): v.InferOutput<S> {
  const result = v.safeParse(schema, input);
  if (result.success) return result.output;
  const fieldErrors = Object.create(null) as FieldErrors;
  for (const issue of result.issues) {
    const field = issue.path?.map((item) => String(item.key)).join('.') || '__all__';
    fieldErrors[field] ??= [issue.message];
  }
  throw errors.invalidFields({ ...fieldErrors });
}
