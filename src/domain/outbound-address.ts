/**
 * Which network addresses Spanbase may send requests to on a user's behalf (webhooks; the same rule
 * as model calls): never link-local or cloud metadata addresses; loopback, private, shared and
 * unique-local ones only when the operator allows private destinations.
 */
import { BlockList, isIP } from 'node:net';

const ALWAYS = new BlockList();
ALWAYS.addSubnet('169.254.0.0', 16, 'ipv4'); // link-local, including 169.254.169.254 (metadata)
ALWAYS.addSubnet('0.0.0.0', 8, 'ipv4');
ALWAYS.addSubnet('fe80::', 10, 'ipv6');
ALWAYS.addAddress('fd00:ec2::254', 'ipv6'); // AWS metadata over IPv6
ALWAYS.addAddress('::', 'ipv6');

const PRIVATE = new BlockList();
PRIVATE.addSubnet('127.0.0.0', 8, 'ipv4');
PRIVATE.addSubnet('10.0.0.0', 8, 'ipv4');
PRIVATE.addSubnet('172.16.0.0', 12, 'ipv4');
PRIVATE.addSubnet('192.168.0.0', 16, 'ipv4');
PRIVATE.addSubnet('100.64.0.0', 10, 'ipv4');
PRIVATE.addAddress('::1', 'ipv6');
PRIVATE.addSubnet('fc00::', 7, 'ipv6');

/** Why `ip` is refused, or null when a request may go there. */
export function addressRefusal(ip: string, allowPrivate: boolean): string | null {
  const family = isIP(ip);
  if (!family) return `'${ip}' is not an IP address`;
  const type = family === 4 ? 'ipv4' : 'ipv6';
  // An IPv4-mapped IPv6 address is judged as the IPv4 address it stands for.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return addressRefusal(mapped[1], allowPrivate);
  if (ALWAYS.check(ip, type))
    return `${ip} is a link-local or metadata address, never reachable from Spanbase`;
  if (!allowPrivate && PRIVATE.check(ip, type))
    return `${ip} is a loopback or private address (set SPANBASE_ALLOW_PRIVATE_PROVIDERS=1 to allow private destinations)`;
  return null;
}

/** Why a webhook URL is not usable (scheme, credentials), or null. The address is judged on connect. */
export function urlProblem(text: string): string | null {
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    return 'Not a valid URL';
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return 'The URL must use http or https';
  if (u.username || u.password) return 'The URL must not hold credentials';
  if (/^metadata(\.google\.internal)?$/i.test(u.hostname))
    return 'Metadata hosts are never reachable from Spanbase';
  return null;
}
