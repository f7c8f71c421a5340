import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OUTBOUND_MAX_BYTES, OUTBOUND_TIMEOUT_MS, OutboundError, OutboundFetch, type OutboundOptions, type ResolvedAddress } from '../../src/lib/outbound-fetch.js'
import { startDocumentServer, type DocumentServer } from '../helpers/document-server.js'

/** The SSRF-safe GET on its own: DNS pinning, the address check, the allowlist, the limits. */
describe('OutboundFetch', () => {
  let server: DocumentServer
  const fetcher = (options: Partial<OutboundOptions> = {}) => new OutboundFetch({ allowedHosts: [], ca: [server.ca], timeoutMs: 2000, ...options })
  /** The reason `promise` was refused with. */
  async function refusal(promise: Promise<unknown>): Promise<OutboundError> {
    const error = await promise.then(() => null, (failure: unknown) => failure)
    expect(error).toBeInstanceOf(OutboundError)
    return error as OutboundError
  }

  beforeAll(async () => {
    server = await startDocumentServer()
    server.serve('/hello', { headers: { 'content-type': 'application/json' }, body: '{"hello":"world"}' })
  })
  afterAll(() => server.close())

  it('defaults: 5 seconds and 64 KiB', () => {
    expect(OUTBOUND_TIMEOUT_MS).toBe(5000)
    expect(OUTBOUND_MAX_BYTES).toBe(65_536)
  })

  it('connects to the address it resolved and checked: a name only the injected resolver knows is reached, resolved once', async () => {
    const asked: string[] = []
    const resolveHost = async (hostname: string): Promise<ResolvedAddress[]> => {
      asked.push(hostname)
      return [{ address: '127.0.0.1', family: 4 }]
    }
    // documents.test is in the certificate but in no DNS: had the socket resolved the name itself, it would have failed.
    const response = await fetcher({ resolveHost, allowedHosts: [`documents.test:${server.port}`] }).get(new URL(`https://documents.test:${server.port}/hello`))
    expect(response.status).toBe(200)
    expect(response.body.toString()).toBe('{"hello":"world"}')
    expect(asked).toEqual(['documents.test'])
  })

  it('every address of a name must be public: one private address among public ones refuses it, before any connection', async () => {
    const before = server.requests.length
    const resolveHost = async (): Promise<ResolvedAddress[]> => [{ address: '93.184.216.34', family: 4 }, { address: '10.0.0.7', family: 4 }]
    const error = await refusal(fetcher({ resolveHost }).get(new URL(`https://documents.test:${server.port}/hello`)))
    expect(error.reason).toBe('refused_address')
    expect(error.message).toMatch(/resolves to a non-public address \(private\)/)
    const mapped = async (): Promise<ResolvedAddress[]> => [{ address: '::ffff:127.0.0.1', family: 6 }]
    expect((await refusal(fetcher({ resolveHost: mapped }).get(new URL(`https://documents.test:${server.port}/hello`)))).message).toMatch(/loopback, IPv4-mapped/)
    expect(server.requests.length).toBe(before)
  })

  it('OUTBOUND_ALLOWED_HOSTS: host alone allows every port, host:port that port only', async () => {
    const url = new URL(`${server.origin}/hello`)
    expect((await fetcher({ allowedHosts: ['127.0.0.1'] }).get(url)).status).toBe(200)
    expect((await fetcher({ allowedHosts: [`127.0.0.1:${server.port}`] }).get(url)).status).toBe(200)
    expect((await refusal(fetcher({ allowedHosts: ['127.0.0.1:443'] }).get(url))).reason).toBe('refused_address')
    expect((await refusal(fetcher({ allowedHosts: ['localhost'] }).get(url))).reason).toBe('refused_address')
  })

  it('only https', async () => {
    expect((await refusal(fetcher().get(new URL(`http://127.0.0.1:${server.port}/hello`)))).reason).toBe('not_https')
  })

  it('plain http only when the caller allows it, and then only for an allowed host (its port too when the entry names one)', async () => {
    const plain = createServer((_request, response) => response.end('{"plain":true}'))
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve))
    try {
      const port = (plain.address() as AddressInfo).port
      const url = new URL(`http://127.0.0.1:${port}/`)
      expect((await fetcher({ allowedHosts: [`127.0.0.1:${port}`] }).get(url, {}, { allowHttp: true })).body.toString()).toBe('{"plain":true}')
      expect((await fetcher({ allowedHosts: ['127.0.0.1'] }).get(url, {}, { allowHttp: true })).status).toBe(200)
      // The default stays https only, for allowed hosts too.
      expect((await refusal(fetcher({ allowedHosts: ['127.0.0.1'] }).get(url))).message).toBe('only https URLs are fetched')
      const otherPort = await refusal(fetcher({ allowedHosts: [`127.0.0.1:${port + 1}`] }).get(url, {}, { allowHttp: true }))
      expect(otherPort).toMatchObject({ reason: 'not_https', message: expect.stringMatching(/only for hosts in OUTBOUND_ALLOWED_HOSTS/) })
      // Port 80 is what an http URL without a port reaches: `host:443` does not admit it.
      expect((await refusal(fetcher({ allowedHosts: ['example.com:443'] }).get(new URL('http://example.com/'), {}, { allowHttp: true }))).reason).toBe('not_https')
    } finally {
      await new Promise<void>((resolve) => plain.close(() => resolve()))
    }
  })

  it('check: the scheme, the allowed hosts and the DNS answer, without connecting', async () => {
    const before = server.requests.length
    const publicName = async (): Promise<ResolvedAddress[]> => [{ address: '93.184.216.34', family: 4 }]
    await expect(fetcher({ resolveHost: publicName }).check(new URL('https://registry.test/'))).resolves.toBeUndefined()
    const privateName = async (): Promise<ResolvedAddress[]> => [{ address: '10.1.2.3', family: 4 }]
    expect((await refusal(fetcher({ resolveHost: privateName }).check(new URL('https://registry.test/')))).message).toMatch(/resolves to a non-public address \(private\)/)
    expect((await refusal(fetcher().check(new URL('http://10.0.0.1/'), { allowHttp: true }))).reason).toBe('not_https')
    expect((await refusal(fetcher().check(new URL('https://10.0.0.1/')))).message).toMatch(/is a non-public address \(private\)/)
    await expect(fetcher({ allowedHosts: ['10.0.0.1'] }).check(new URL('http://10.0.0.1/'), { allowHttp: true })).resolves.toBeUndefined()
    const nowhere = async (): Promise<ResolvedAddress[]> => []
    expect((await refusal(fetcher({ resolveHost: nowhere }).check(new URL('https://nowhere.test/')))).reason).toBe('unresolvable')
    expect(server.requests.length).toBe(before)
  })

  it('a name that does not resolve', async () => {
    const resolveHost = async (): Promise<ResolvedAddress[]> => {
      throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' })
    }
    expect((await refusal(fetcher({ resolveHost }).get(new URL('https://nowhere.test/x')))).reason).toBe('unresolvable')
  })

  it('a resolver slower than the timeout counts against it too', async () => {
    const resolveHost = () => new Promise<ResolvedAddress[]>((resolve) => setTimeout(() => resolve([{ address: '127.0.0.1', family: 4 }]), 1000))
    const error = await refusal(fetcher({ resolveHost, timeoutMs: 200, allowedHosts: ['documents.test'] }).get(new URL(`https://documents.test:${server.port}/hello`)))
    expect(error.reason).toBe('timeout')
  })

  it('a limit of whole mebibytes is named in MiB', async () => {
    server.serve('/bigger', { headers: { 'content-type': 'application/json' }, body: 'x'.repeat(1024 * 1024 + 1) })
    const error = await refusal(fetcher({ allowedHosts: ['127.0.0.1'], maxBytes: 1024 * 1024 }).get(new URL(`${server.origin}/bigger`)))
    expect(error).toMatchObject({ reason: 'too_large', message: 'it is larger than 1 MiB' })
  })

  it('maxBytes: the body is cut off past it; a status other than 200 comes back without its body', async () => {
    server.serve('/big', { headers: { 'content-type': 'application/json' }, body: 'x'.repeat(2000), chunked: true })
    const small = fetcher({ allowedHosts: ['127.0.0.1'], maxBytes: 1024 })
    const error = await refusal(small.get(new URL(`${server.origin}/big`)))
    expect(error).toMatchObject({ reason: 'too_large', message: 'it is larger than 1 KiB' })
    server.serve('/moved', { status: 301, headers: { location: `${server.origin}/hello` }, body: 'moved' })
    const moved = await small.get(new URL(`${server.origin}/moved`))
    expect(moved).toMatchObject({ status: 301, headers: { location: `${server.origin}/hello` } })
    expect(moved.body.length).toBe(0)
  })
})
