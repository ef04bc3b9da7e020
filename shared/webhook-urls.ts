// Where webhooks may be sent. Checked when a URL is registered and again, on the address actually connected
// to, at every delivery: a name that resolved to a public address yesterday may resolve to 127.0.0.1 today.
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';

/** Resolves a host name to every address it has. Injected in tests; `dns.lookup` otherwise. */
export type ResolveHost = (host: string) => Promise<string[]>;

export const systemResolve: ResolveHost = (host) =>
  new Promise((resolve, reject) => {
    dnsLookup(host, { all: true, verbatim: true }, (error, addresses) => (error ? reject(error) : resolve(addresses.map((a) => a.address))));
  });

// Loopback, private, link-local (cloud metadata at 169.254.169.254), CGNAT, unique-local, multicast, reserved,
// documentation and translation ranges: nothing a public receiver lives at. IPv6 forms that carry an IPv4 address
// a router may translate are refused outright: IPv4-compatible (::/96, `[::127.0.0.1]`), SIIT (::ffff:0:0:0/96),
// 6to4 (2002::/16) and Teredo (2001::/32, inside 2001::/23). IPv4-mapped and NAT64 addresses are judged by the
// IPv4 address they carry (embeddedIpv4).
const FORBIDDEN = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15],
  ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) FORBIDDEN.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [
  ['::', 96], ['::ffff:0:0:0', 96], ['64:ff9b:1::', 48], ['100::', 64], ['2001::', 23], ['2001:db8::', 32], ['2002::', 16],
  ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
] as const) FORBIDDEN.addSubnet(network, prefix, 'ipv6');

/** IPv4 written inside IPv6 (mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`): judged as the IPv4 it carries. */
function embeddedIpv4(address: string): string | undefined {
  const match = /^(?:::ffff:|64:ff9b::)(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/i.exec(address);
  if (!match) return undefined;
  if (match[1]) return match[1];
  const high = parseInt(match[2]!, 16);
  const low = parseInt(match[3]!, 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

export function isForbiddenAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  const v4 = family === 6 ? embeddedIpv4(address) : address;
  if (v4) return FORBIDDEN.check(v4, 'ipv4');
  return FORBIDDEN.check(address, 'ipv6');
}

/** Where a deployment lets webhooks go. */
export interface UrlRules {
  /** Development and tests only: http://, any port, private and loopback addresses. */
  allowInsecure: boolean;
  /** The ports a receiver may listen on (443 and 8443 unless the deployment says otherwise). */
  ports: number[];
}

export interface UrlPolicy extends UrlRules {
  resolve: ResolveHost;
}

/** The form of a URL rules judge and subscriptions store: `https://Example.com:443/a/../b` is `https://example.com/b`. */
export function normaliseUrl(raw: string): string {
  return new URL(raw).href;
}

/**
 * What is wrong with the URL itself, before any name is resolved: scheme, credentials, port, and an IP literal
 * host (sockets connect to those without a lookup, so the lookup guard never sees them). Null when it is acceptable.
 */
export function urlProblem(raw: string, rules: UrlRules): string | null {
  const url = URL.parse(raw);
  if (!url) return 'must be an absolute URL';
  if (url.protocol !== 'https:' && !(rules.allowInsecure && url.protocol === 'http:')) return 'must be an https:// URL';
  if (url.username || url.password) return 'must not carry credentials (user:password@)';
  if (rules.allowInsecure) return null;
  const port = Number(url.port || 443);
  if (!rules.ports.includes(port)) return `must use port ${rules.ports.join(' or ')} (not ${port})`;
  const host = hostOf(url);
  if (isIP(host) && isForbiddenAddress(host)) return `${host} is a loopback, private, link-local or otherwise non-public address`;
  return null;
}

function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

/** What is wrong with a URL being registered, or null: the URL itself, then every address its host resolves to. */
export async function webhookUrlProblem(raw: string, policy: UrlPolicy): Promise<string | null> {
  const problem = urlProblem(raw, policy);
  if (problem || policy.allowInsecure) return problem;
  const host = hostOf(new URL(raw));
  if (isIP(host)) return null;
  let addresses: string[];
  try {
    addresses = await policy.resolve(host);
  } catch {
    addresses = [];
  }
  if (addresses.length === 0) return `host "${host}" does not resolve`;
  const forbidden = addresses.find(isForbiddenAddress);
  if (forbidden) return `host "${host}" resolves to ${forbidden}, a loopback, private, link-local or otherwise non-public address`;
  return null;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for sockets (http.Agent's option) that resolves with `resolve` and refuses to connect to a
 * non-public address: the check applies to the very address the socket connects to, so a name that rebinds
 * between check and use cannot slip through.
 */
export function guardedLookup(resolve: ResolveHost) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    resolve(hostname).then(
      (addresses) => {
        const wanted = options.family === 4 || options.family === 6 ? addresses.filter((a) => isIP(a) === options.family) : addresses;
        const forbidden = wanted.find(isForbiddenAddress);
        if (forbidden || wanted.length === 0) {
          const error: NodeJS.ErrnoException = new Error(forbidden
            ? `refused to connect: ${hostname} resolves to ${forbidden}, which is not a public address`
            : `${hostname} does not resolve`);
          error.code = forbidden ? 'ERR_WEBHOOK_ADDRESS_FORBIDDEN' : 'ENOTFOUND';
          callback(error, '');
          return;
        }
        if (options.all) callback(null, wanted.map((address) => ({ address, family: isIP(address) })));
        else callback(null, wanted[0]!, isIP(wanted[0]!));
      },
      (error: NodeJS.ErrnoException) => callback(error, ''),
    );
  };
}
