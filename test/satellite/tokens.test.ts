import { describe, expect, it } from 'vitest'
import { CACHE_MS, TokenChecker } from '../../examples/satellite/src/tokens.js'
import type { TokenClaims } from '../../examples/satellite/src/types.js'

/**
 * The satellite keeps what introspection said of a client's token for a short while, so that a
 * session's calls do not each wait for the backend. The bound is what the documentation promises:
 * a revoked token stops working within a minute, an expired one at once, and a token is never kept
 * in the clear. The clock is the checker's own, moved by hand.
 */
describe('reference satellite: the token check it keeps', () => {
  const active = (exp: number): TokenClaims => ({ active: true, token_type: 'Bearer', scope: 'mcp:read', aud: 'http://satellite/mcp', team_id: 't', sub: 'u', exp })

  function checker(startMs = 1_000_000_000_000) {
    let now = startMs
    const asked: string[] = []
    const answers = new Map<string, TokenClaims>()
    const tokens = new TokenChecker(async (token) => {
      asked.push(token)
      return answers.get(token) ?? { active: false }
    }, () => now)
    return { tokens, asked, answers, advance: (ms: number) => (now += ms), nowSeconds: () => Math.floor(now / 1000) }
  }

  it('asks again after a minute: a token revoked meanwhile is refused from then on', async () => {
    const { tokens, asked, answers, advance, nowSeconds } = checker()
    answers.set('tok', active(nowSeconds() + 3600))
    expect((await tokens.claims('tok')).active).toBe(true)
    answers.set('tok', { active: false }) // revoked at the backend
    advance(CACHE_MS - 1)
    expect((await tokens.claims('tok')).active).toBe(true)
    expect(asked).toEqual(['tok'])
    advance(1)
    expect((await tokens.claims('tok')).active).toBe(false)
    expect(asked).toEqual(['tok', 'tok'])
  })

  it('never keeps an answer past the token\'s expiry', async () => {
    const { tokens, answers, advance, nowSeconds } = checker()
    answers.set('short', active(nowSeconds() + 10))
    expect((await tokens.claims('short')).active).toBe(true)
    advance(10_000)
    // The backend still says active (its clock may lag): the expiry alone ends it here.
    expect((await tokens.claims('short')).active).toBe(false)
  })

  it('keeps a refusal for 10 s, then asks again', async () => {
    const { tokens, asked, answers, advance, nowSeconds } = checker()
    expect((await tokens.claims('later')).active).toBe(false)
    answers.set('later', active(nowSeconds() + 3600))
    advance(9_999)
    expect((await tokens.claims('later')).active).toBe(false)
    advance(1)
    expect((await tokens.claims('later')).active).toBe(true)
    expect(asked).toEqual(['later', 'later'])
  })

  it('asks once for concurrent checks of one token, and keeps no token in the clear', async () => {
    const { tokens, asked, answers, nowSeconds } = checker()
    answers.set('secret-token-value', active(nowSeconds() + 3600))
    const results = await Promise.all(Array.from({ length: 10 }, () => tokens.claims('secret-token-value')))
    expect(results.every((claims) => claims.active)).toBe(true)
    expect(asked).toEqual(['secret-token-value'])
    const kept = [...((tokens as unknown as { cache: Map<string, unknown> }).cache.keys())]
    expect(kept).toHaveLength(1)
    expect(kept[0]).not.toContain('secret-token-value')
  })
})
