/**
 * The satellite's key pairs while one replaces another. The backend seals to whichever key it
 * holds, and a key change reaches it before the satellite hears the answer, so a document sealed
 * to the new key can arrive first; an instance may also restart from a spec sealed to the old
 * key. Both are tried, the current key first.
 */
import { UnsealError, type SatelliteKeys } from './sealing.js'

/** What an instance needs of the keys: its secrets opened. */
export interface SecretOpener {
  openAll(instanceId: string, secrets: ReadonlyArray<{ target: string; sealed: string }>): Promise<Map<string, string>>
}

/** The current key, the one it replaced, and one being introduced. */
const KEPT = 3

export class KeyRing implements SecretOpener {
  private keys: SatelliteKeys[] = []

  get current(): SatelliteKeys | undefined {
    return this.keys[0]
  }

  /** Makes `keys` the current pair; the earlier ones stay as fallbacks. */
  use(keys: SatelliteKeys): void {
    this.keys = [keys, ...this.keys.filter((each) => each !== keys)].slice(0, KEPT)
  }

  /** Tries `keys` too, right after the current one: the backend may hold it any moment now. */
  expect(keys: SatelliteKeys): void {
    const [current, ...older] = this.keys.filter((each) => each !== keys)
    this.keys = (current === undefined ? [keys] : [current, keys, ...older]).slice(0, KEPT)
  }

  drop(keys: SatelliteKeys): void {
    this.keys = this.keys.filter((each) => each !== keys)
  }

  async openAll(instanceId: string, secrets: ReadonlyArray<{ target: string; sealed: string }>): Promise<Map<string, string>> {
    const values = new Map<string, string>()
    for (const secret of secrets) values.set(secret.target, await this.first((keys) => keys.open(instanceId, secret.target, secret.sealed)))
    return values
  }

  /** The nonce of a key-change challenge, opened by whichever key it was sealed to. */
  openChallenge(challenge: string, sealed: string): Promise<Buffer> {
    return this.first((keys) => keys.openChallenge(challenge, sealed))
  }

  private async first<T>(attempt: (keys: SatelliteKeys) => Promise<T>): Promise<T> {
    let failure: unknown = new UnsealError('-', 'the satellite has no key')
    for (const keys of this.keys) {
      try {
        return await attempt(keys)
      } catch (error) {
        failure = error
      }
    }
    throw failure
  }
}
