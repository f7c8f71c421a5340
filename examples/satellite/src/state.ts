/**
 * The pairing kept between runs: the satellite's id, its API key and its key pair. Without it a
 * restart would need a new registration token, and every secret sealed to the old public key
 * would stop opening.
 *
 * The file is written owner-only (0600, in a 0700 folder) and replaced atomically, so a crash
 * mid-write leaves the previous pairing, never half of one.
 */
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

export interface Pairing {
  backend_url: string
  name: string
  satellite_id: string
  api_key: string
  /** base64url of the raw X25519 keys. */
  private_key: string
  public_key: string
  /** The URL it registered; a new one needs a new registration. */
  satellite_url?: string
  /** As the registration answered it: `team` serves one team, `global` every team. Absent (older files): taken as global. */
  satellite_type?: string
  /**
   * A key pair being introduced (saved before the backend hears of it): if the satellite stops
   * before it knows the outcome, it finishes the change on its next start.
   */
  next_private_key?: string
  next_public_key?: string
}

const FILE = 'satellite.json'

export class StateStore {
  /** `dir` undefined: nothing is written, each start pairs afresh. */
  constructor(private readonly dir: string | undefined) {}

  get path(): string | undefined {
    return this.dir === undefined ? undefined : join(this.dir, FILE)
  }

  /** The saved pairing, or undefined when there is none (or it is unreadable). */
  async load(): Promise<Pairing | undefined> {
    const path = this.path
    if (path === undefined) return undefined
    let text: string
    try {
      text = await readFile(path, 'utf8')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
      throw error
    }
    // Tighten the mode in case someone copied the file around with a looser one.
    await chmod(path, 0o600)
    const value = JSON.parse(text) as Partial<Pairing>
    const fields = ['backend_url', 'name', 'satellite_id', 'api_key', 'private_key', 'public_key'] as const
    if (fields.some((field) => typeof value[field] !== 'string')) return undefined
    return value as Pairing
  }

  async save(pairing: Pairing): Promise<void> {
    const path = this.path
    if (path === undefined || this.dir === undefined) return
    await mkdir(this.dir, { recursive: true, mode: 0o700 })
    const temporary = `${path}.${process.pid}.tmp`
    await writeFile(temporary, `${JSON.stringify(pairing, null, 2)}\n`, { mode: 0o600 })
    await rename(temporary, path)
  }

  async forget(): Promise<void> {
    const path = this.path
    if (path !== undefined) await rm(path, { force: true })
  }
}
