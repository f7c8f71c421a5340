import { mkdtempSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { SatelliteKeys, UnsealError } from '../../examples/satellite/src/sealing.js'
import { StateStore } from '../../examples/satellite/src/state.js'
import { sealTo } from './support.js'

/**
 * The reference satellite opens what the backend seals: secrets sealed to its public key with the
 * contract's HPKE parameters (sealed here by test code written from the contract, not with the
 * satellite's own module), and only for the instance and place they were sealed for.
 */
describe('reference satellite: sealed secrets', () => {
  it('registers a raw 32-byte X25519 public key as base64url without padding', async () => {
    const keys = await SatelliteKeys.generate()
    expect(keys.publicKey).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(Buffer.from(keys.publicKey, 'base64url')).toHaveLength(32)
    const other = await SatelliteKeys.generate()
    expect(other.publicKey).not.toBe(keys.publicKey)
  })

  it('opens values sealed to its key for the right instance and target: text, unicode, empty, long', async () => {
    const keys = await SatelliteKeys.generate()
    const values = ['sk-live-4f9a1c', 'pässwörd ✓ 密码', '', 'x'.repeat(20_000)]
    for (const [index, value] of values.entries()) {
      const target = `env:VALUE_${index}`
      const sealed = await sealTo(keys.publicKey, 'inst-1:team', target, value)
      expect(sealed).toMatch(/^[A-Za-z0-9_-]+$/)
      expect(await keys.open('inst-1:team', target, sealed)).toBe(value)
    }
    const all = await keys.openAll('inst-1:user-9', [
      { target: 'env:API_KEY', sealed: await sealTo(keys.publicKey, 'inst-1:user-9', 'env:API_KEY', 'k1') },
      { target: 'header:Authorization', sealed: await sealTo(keys.publicKey, 'inst-1:user-9', 'header:Authorization', 'Bearer k2') },
    ])
    expect(Object.fromEntries(all)).toEqual({ 'env:API_KEY': 'k1', 'header:Authorization': 'Bearer k2' })
  })

  it('refuses a value moved to another instance or target, sealed to another key, or altered; the error holds no part of it', async () => {
    const keys = await SatelliteKeys.generate()
    const other = await SatelliteKeys.generate()
    const value = 'sk-live-do-not-leak-77'
    const sealed = await sealTo(keys.publicKey, 'inst-1:team', 'env:API_KEY', value)
    const altered = Buffer.from(sealed, 'base64url')
    altered[altered.length - 1]! ^= 1
    const attempts: Array<[SatelliteKeys, string, string, string]> = [
      [keys, 'inst-2:team', 'env:API_KEY', sealed],
      [keys, 'inst-1:team', 'env:OTHER', sealed],
      [keys, 'inst-1:team', 'header:API_KEY', sealed],
      [other, 'inst-1:team', 'env:API_KEY', sealed],
      [keys, 'inst-1:team', 'env:API_KEY', altered.toString('base64url')],
      [keys, 'inst-1:team', 'env:API_KEY', sealed.slice(0, 40)],
    ]
    for (const [key, instance, target, text] of attempts) {
      const error = await key.open(instance, target, text).then(() => undefined, (thrown: unknown) => thrown)
      expect(error).toBeInstanceOf(UnsealError)
      expect((error as Error).message).toContain(target)
      expect((error as Error).message).not.toContain(value)
    }
  })

  it('keeps its pairing across restarts in an owner-only file, and the restored key opens what was sealed to the old one', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'sat-state-')), 'nested')
    const store = new StateStore(dir)
    expect(await store.load()).toBeUndefined()
    const keys = await SatelliteKeys.generate()
    await store.save({ backend_url: 'http://127.0.0.1:1', name: 'edge-1', satellite_id: 'sat-1', api_key: 'service_satkey_x', private_key: keys.privateKeyText, public_key: keys.publicKey })
    expect(statSync(store.path!).mode & 0o777).toBe(0o600)
    expect(statSync(dir).mode & 0o777).toBe(0o700)

    const loaded = await new StateStore(dir).load()
    expect(loaded).toMatchObject({ satellite_id: 'sat-1', api_key: 'service_satkey_x', public_key: keys.publicKey })
    const restored = await SatelliteKeys.restore(loaded!.private_key, loaded!.public_key)
    const sealed = await sealTo(keys.publicKey, 'inst-1:team', 'arg:token', 'restart-proof')
    expect(await restored.open('inst-1:team', 'arg:token', sealed)).toBe('restart-proof')

    await store.forget()
    expect(await store.load()).toBeUndefined()
  })
})
