// The links an owner's autoresponse may carry: only to the key's own domains (and their
// subdomains), none for a key without domains. An autoresponse goes to whoever typed an address
// into the form, so a link elsewhere would make this service deliver any stranger's link to any
// address. Mail readers make links of more than `https://…`: of `www.` names, bare domain names
// and addresses too, so each of those counts. No I/O.
import { domainToASCII } from 'node:url';
import { parse } from 'tldts';

/** A URL with a scheme: its host (after any user@, before any port or path). */
const SCHEME_URL = /\b[a-z][a-z0-9+.-]*:\/\/(?:[^\s/?#@<>"']*@)?(\[[^\]\s]*\]|[^\s/?#:<>"'()[\]]+)/giu;
/** A mailto: address's host. */
const MAILTO = /\bmailto:[^\s@<>"']*@([^\s?#<>"'()[\]]+)/giu;
/** A name of dot-separated labels, standing alone or after an @ (an address's domain). */
const BARE_NAME = /(?<![\p{L}\p{N}_.-])(?:[\p{L}\p{N}](?:[\p{L}\p{N}-]*[\p{L}\p{N}])?\.)+[\p{L}\p{N}](?:[\p{L}\p{N}-]*[\p{L}\p{N}])?(?![\p{L}\p{N}_-])/gu;

const asciiHost = (host: string) =>
  domainToASCII(
    host
      .toLowerCase()
      .replace(/\.$/, '')
      .replace(/^\[|\]$/g, ''),
  ) || host.toLowerCase();

/** Whether a bare name is one a mail reader would link: a name under a real top-level domain, a www. name, or a dotted IPv4 address ("2.0" is a version). */
function readsAsLink(name: string): boolean {
  return /^\d{1,3}(?:\.\d{1,3}){3}$/.test(name) || /^www\./i.test(name) || parse(name).isIcann === true;
}

/** The hosts the text links to, lower-cased and in ASCII, each once. */
export function linkedHosts(text: string): string[] {
  const hosts = new Set<string>();
  for (const match of text.matchAll(SCHEME_URL)) hosts.add(asciiHost(match[1]!));
  for (const match of text.matchAll(MAILTO)) hosts.add(asciiHost(match[1]!));
  for (const match of text.matchAll(BARE_NAME)) if (readsAsLink(match[0])) hosts.add(asciiHost(match[0]));
  return [...hosts];
}

/** The hosts the text links to outside `domains` (a key's domains, lower-cased); empty when it may go. */
export function linksOutside(text: string, domains: readonly string[]): string[] {
  return linkedHosts(text).filter((host) => !domains.some((domain) => host === domain || host.endsWith(`.${domain}`)));
}
