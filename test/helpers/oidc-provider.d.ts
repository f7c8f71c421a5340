/**
 * The few parts of oidc-provider (a test-only dependency that ships no types) the tests use:
 * the constructor, its Koa callback and middleware, and the client model's lookup.
 */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http'

  export type Configuration = Record<string, unknown>

  export interface KoaContext {
    path: string
    method: string
    status: number
    body: unknown
  }

  export default class Provider {
    constructor(issuer: string, configuration?: Configuration)
    readonly issuer: string
    use(middleware: (ctx: KoaContext, next: () => Promise<void>) => Promise<void>): void
    callback(): (req: IncomingMessage, res: ServerResponse) => void
    Client: { find(id: string): Promise<unknown> }
    [key: string]: unknown
  }
}
