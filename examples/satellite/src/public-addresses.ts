/**
 * Which IP addresses are on the public internet. A satellite that serves several teams must not
 * let one team's remote URL reach the satellite's own host, its network or a cloud's metadata
 * service (server-side request forgery). The ranges are the special-purpose address registries
 * of RFC 6890 as IANA keeps them; an IPv6 address that carries an IPv4 address (IPv4-mapped,
 * NAT64 per RFC 6052, 6to4 per RFC 3056) is judged by the IPv4 address it reaches.
 */
import { BlockList, isIPv4, isIPv6 } from 'node:net'

type Range = readonly [kind: string, prefix: string, bits: number]

const IPV4: readonly Range[] = [
  ['unspecified', '0.0.0.0', 8],
  ['private', '10.0.0.0', 8],
  ['carrier-grade NAT', '100.64.0.0', 10],
  ['loopback', '127.0.0.0', 8],
  // Holds the cloud metadata services (169.254.169.254).
  ['link-local', '169.254.0.0', 16],
  ['private', '172.16.0.0', 12],
  ['IETF protocol assignment', '192.0.0.0', 24],
  ['documentation', '192.0.2.0', 24],
  ['6to4 relay anycast', '192.88.99.0', 24],
  ['private', '192.168.0.0', 16],
  ['benchmarking', '198.18.0.0', 15],
  ['documentation', '198.51.100.0', 24],
  ['documentation', '203.0.113.0', 24],
  ['multicast', '224.0.0.0', 4],
  // Includes the limited broadcast address 255.255.255.255.
  ['reserved or broadcast', '240.0.0.0', 4],
]

const IPV6: readonly Range[] = [
  ['unspecified', '::', 128],
  ['loopback', '::1', 128],
  ['NAT64 local use', '64:ff9b:1::', 48],
  ['discard-only', '100::', 64],
  // Also covers Teredo (2001::/32) and ORCHID.
  ['IETF protocol assignment', '2001::', 23],
  ['documentation', '2001:db8::', 32],
  ['documentation', '3fff::', 20],
  ['unique-local', 'fc00::', 7],
  ['link-local', 'fe80::', 10],
  ['multicast', 'ff00::', 8],
]

/**
 * One list per kind, so a refusal can say what the address is. Node's BlockList judges an
 * IPv4-mapped IPv6 address (::ffff:a.b.c.d) by the IPv4 rules itself; the NAT64 and 6to4 forms of
 * each IPv4 range are added as IPv6 rules.
 */
const KINDS = new Map<string, BlockList>()
for (const [kind, prefix, bits] of IPV4) {
  listOf(kind).addSubnet(prefix, bits, 'ipv4')
  const [high, low] = groups(prefix)
  listOf(`${kind}, NAT64`).addSubnet(`64:ff9b::${high}:${low}`, 96 + bits, 'ipv6')
  listOf(`${kind}, 6to4`).addSubnet(`2002:${high}:${low}::`, 16 + bits, 'ipv6')
}
for (const [kind, prefix, bits] of IPV6) listOf(kind).addSubnet(prefix, bits, 'ipv6')

/** IPv6 prefixes outside global unicast whose addresses stand for a (checked) IPv4 address. */
const CARRIES_IPV4 = new BlockList()
CARRIES_IPV4.addSubnet('::ffff:0:0', 96, 'ipv6')
CARRIES_IPV4.addSubnet('64:ff9b::', 96, 'ipv6')
/** RFC 4291 §2.4: IPv6 outside 2000::/3 is not on the public internet today. */
const GLOBAL_UNICAST = new BlockList()
GLOBAL_UNICAST.addSubnet('2000::', 3, 'ipv6')

/**
 * The kind of non-public range `address` (an IP literal, IPv6 without brackets) is in —
 * `loopback`, `private`, `link-local`, `unique-local`… — or null for a public address. Anything
 * that is not an IP address is `not an IP address`.
 */
export function nonPublicKind(address: string): string | null {
  const family = isIPv4(address) ? 'ipv4' : isIPv6(address) ? 'ipv6' : undefined
  if (family === undefined) return 'not an IP address'
  for (const [kind, list] of KINDS) if (list.check(address, family)) return kind
  if (family === 'ipv4' || CARRIES_IPV4.check(address, 'ipv6') || GLOBAL_UNICAST.check(address, 'ipv6')) return null
  return 'reserved'
}

function listOf(kind: string): BlockList {
  let list = KINDS.get(kind)
  if (list === undefined) {
    list = new BlockList()
    KINDS.set(kind, list)
  }
  return list
}

/** An IPv4 address as the two IPv6 groups that carry it. */
function groups(ipv4: string): [string, string] {
  const [a = 0, b = 0, c = 0, d = 0] = ipv4.split('.').map(Number)
  return [((a << 8) | b).toString(16), ((c << 8) | d).toString(16)]
}
