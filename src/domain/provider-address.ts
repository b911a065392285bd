import { BlockList, isIP } from 'node:net';

/**
 * Which network addresses a model call may go to. Link-local and cloud metadata addresses are refused
 * always (a provider URL must never reach the host's instance credentials); loopback and private
 * ranges only when the operator allows them (a provider on the local network, or tests).
 */
function blockList(ranges: [string, number, 'ipv4' | 'ipv6'][]): BlockList {
  const list = new BlockList();
  for (const [net, prefix, family] of ranges) list.addSubnet(net, prefix, family);
  return list;
}

const ALWAYS = blockList([
  ['0.0.0.0', 8, 'ipv4'], // "this network"
  ['169.254.0.0', 16, 'ipv4'], // link-local, AWS/GCP/Azure metadata 169.254.169.254
  ['100.100.100.200', 32, 'ipv4'], // Alibaba Cloud metadata
  ['224.0.0.0', 3, 'ipv4'], // multicast and reserved, broadcast
  ['::', 128, 'ipv6'],
  ['fe80::', 10, 'ipv6'], // link-local
  ['fd00:ec2::254', 128, 'ipv6'], // AWS metadata over IPv6
  ['ff00::', 8, 'ipv6'], // multicast
]);

const PRIVATE = blockList([
  ['127.0.0.0', 8, 'ipv4'],
  ['10.0.0.0', 8, 'ipv4'],
  ['172.16.0.0', 12, 'ipv4'],
  ['192.168.0.0', 16, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'], // carrier-grade NAT
  ['::1', 128, 'ipv6'],
  ['fc00::', 7, 'ipv6'], // unique local
]);

const METADATA_NAMES = new Set(['metadata', 'metadata.google.internal', 'metadata.goog', 'instance-data']);

/** An IPv4-mapped IPv6 address (::ffff:a.b.c.d) as the IPv4 address it stands for. */
function unmapped(address: string): { address: string; family: 'ipv4' | 'ipv6' } {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (m) return { address: m[1], family: 'ipv4' };
  return { address, family: isIP(address) === 6 ? 'ipv6' : 'ipv4' };
}

/** Why a call may not go to this IP address, or null when it may. */
export function addressRefusal(ip: string, allowPrivate: boolean): string | null {
  const { address, family } = unmapped(ip.replace(/^\[|\]$/g, '').split('%')[0]);
  if (ALWAYS.check(address, family)) return `${ip} is a link-local, metadata or reserved address`;
  if (!allowPrivate && PRIVATE.check(address, family))
    return `${ip} is a loopback or private address (an operator may allow these with SPANBASE_ALLOW_PRIVATE_PROVIDERS=1)`;
  return null;
}

/** Why a call may not go to this host name, before it is resolved (metadata service names). */
export function hostRefusal(hostname: string): string | null {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return METADATA_NAMES.has(name) ? `${hostname} is a cloud metadata service` : null;
}
