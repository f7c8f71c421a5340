import { isIPv4, isIPv6 } from 'node:net'

/**
 * Which IP addresses are public. Outbound requests made on someone else's behalf (a client's
 * metadata document) must not reach this host, its network or anything else not on the public
 * internet (server-side request forgery). The ranges are the special-purpose registries of
 * RFC 6890 as IANA keeps them; an IPv6 address that carries an IPv4 address (IPv4-mapped, NAT64,
 * 6to4) is judged by the IPv4 address it reaches.
 */

type Range = readonly [prefix: string, bits: number, kind: string]

const IPV4_RANGES: readonly Range[] = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'shared, carrier-grade NAT'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'IETF protocol assignment'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, '6to4 relay anycast'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  // Includes the limited broadcast address 255.255.255.255.
  ['240.0.0.0', 4, 'reserved'],
]

const IPV6_RANGES: readonly Range[] = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['64:ff9b:1::', 48, 'NAT64 local use'],
  ['100::', 64, 'discard-only'],
  // Also covers Teredo (2001::/32) and ORCHID.
  ['2001::', 23, 'IETF protocol assignment'],
  ['2001:db8::', 32, 'documentation'],
  ['3fff::', 20, 'documentation'],
  ['fc00::', 7, 'unique-local'],
  ['fe80::', 10, 'link-local'],
  ['ff00::', 8, 'multicast'],
]

/** IPv6 prefixes whose addresses carry an IPv4 address, and the byte where it starts. */
const EMBEDDED_IPV4: ReadonlyArray<readonly [prefix: string, bits: number, offset: number, via: string]> = [
  ['::ffff:0:0', 96, 12, 'IPv4-mapped'],
  ['64:ff9b::', 96, 12, 'NAT64'],
  ['2002::', 16, 2, '6to4'],
]

const parsedV4 = IPV4_RANGES.map(([prefix, bits, kind]) => ({ bytes: ipv4Bytes(prefix), bits, kind }))
const parsedV6 = IPV6_RANGES.map(([prefix, bits, kind]) => ({ bytes: ipv6Bytes(prefix), bits, kind }))
const parsedEmbedded = EMBEDDED_IPV4.map(([prefix, bits, offset, via]) => ({ bytes: ipv6Bytes(prefix), bits, offset, via }))
/** Global unicast (RFC 4291 §2.4): IPv6 outside 2000::/3 is not on the public internet today. */
const GLOBAL_UNICAST = { bytes: ipv6Bytes('2000::'), bits: 3 }

/**
 * The kind of non-public range `address` (an IPv4 or IPv6 literal, IPv6 without brackets) is in —
 * `loopback`, `private`, `link-local`, `unique-local`, `multicast`, `unspecified`… — or null for a
 * public address. Anything that is not an IP address at all is `invalid`.
 */
export function specialUseKind(address: string): string | null {
  if (isIPv4(address)) return kindOfV4(ipv4Bytes(address))
  const unzoned = address.replace(/%.*$/, '')
  if (!isIPv6(unzoned)) return 'invalid'
  const bytes = ipv6Bytes(unzoned)
  for (const { bytes: prefix, bits, offset, via } of parsedEmbedded) {
    if (!inPrefix(bytes, prefix, bits)) continue
    const kind = kindOfV4(bytes.subarray(offset, offset + 4))
    return kind === null ? null : `${kind}, ${via}`
  }
  for (const { bytes: prefix, bits, kind } of parsedV6) if (inPrefix(bytes, prefix, bits)) return kind
  return inPrefix(bytes, GLOBAL_UNICAST.bytes, GLOBAL_UNICAST.bits) ? null : 'reserved'
}

function kindOfV4(bytes: Uint8Array): string | null {
  for (const { bytes: prefix, bits, kind } of parsedV4) if (inPrefix(bytes, prefix, bits)) return kind
  return null
}

function inPrefix(bytes: Uint8Array, prefix: Uint8Array, bits: number): boolean {
  for (let bit = 0; bit < bits; bit += 8) {
    const mask = bits - bit >= 8 ? 0xff : (0xff << (8 - (bits - bit))) & 0xff
    if ((bytes[bit / 8]! & mask) !== (prefix[bit / 8]! & mask)) return false
  }
  return true
}

function ipv4Bytes(address: string): Uint8Array {
  return Uint8Array.from(address.split('.').map(Number))
}

/** The 16 bytes of a valid IPv6 literal (callers check it with isIPv6 first). */
function ipv6Bytes(address: string): Uint8Array {
  let text = address
  let tail: number[] = []
  // A dotted IPv4 tail (::ffff:10.0.0.1) is the last two groups.
  const dotted = /:(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (dotted !== null) {
    const [a = 0, b = 0, c = 0, d = 0] = ipv4Bytes(dotted[1]!)
    tail = [(a << 8) | b, (c << 8) | d]
    text = text.slice(0, dotted.index + 1)
    if (!text.endsWith('::')) text = text.slice(0, -1)
  }
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((group) => parseInt(group, 16)))
  const [head = '', rest] = text.split('::')
  const left = parse(head)
  const right = [...(rest === undefined ? [] : parse(rest)), ...tail]
  const zeros = new Array<number>(8 - left.length - right.length).fill(0)
  const bytes = new Uint8Array(16)
  ;[...left, ...zeros, ...right].forEach((group, index) => {
    bytes[index * 2] = group >> 8
    bytes[index * 2 + 1] = group & 0xff
  })
  return bytes
}
