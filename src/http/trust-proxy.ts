import type { TrustProxy } from '../config.js'

type TrustProxyOption = boolean | string[] | ((address: string, hop: number) => boolean)

/**
 * TRUST_PROXY as Fastify's `trustProxy`. A hop count becomes a function trusting the nearest
 * `hops` addresses (proxy-addr counts the socket's peer as hop 0): Fastify itself treats a bare
 * number as trusting nothing. A list of addresses/CIDRs goes to proxy-addr as it is.
 */
export function trustProxyOption(trust: TrustProxy): TrustProxyOption {
  if (typeof trust === 'number') return (_address, hop) => hop < trust
  return typeof trust === 'object' ? [...trust] : trust
}
