/**
 * Each instance's private writable folder: its HOME, with its npm and uv caches inside, so no two
 * instances share a file and nothing one downloads can be swapped under another. Created on the
 * instance's first start (0700, owned by the user its sandbox runs as), kept across its restarts,
 * removed with the instance.
 */
import { createHash } from 'node:crypto'
import { rmSync } from 'node:fs'
import { chmod, chown, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface Owner {
  uid: number
  gid: number
}

/** Folders this satellite made: the only ones it ever removes from a folder an operator named. */
const MADE_HERE = /^i-[a-z0-9_.-]{0,40}-[a-f0-9]{16}$/

export class InstanceDirs {
  private constructor(readonly root: string, private readonly owner: Owner | undefined, private readonly temporary: boolean) {}

  /**
   * `root` undefined: a fresh folder under the system's temporary folder, removed by close().
   * A named root keeps only what this satellite made in it: folders left by a crash go at start.
   */
  static async open(root: string | undefined, owner: Owner | undefined): Promise<InstanceDirs> {
    if (root === undefined) {
      const made = await mkdtemp(join(tmpdir(), 'mcp-satellite-instances-'))
      // Another user (the sandbox's) must pass through to its own folder, never list the others.
      await chmod(made, 0o711)
      return new InstanceDirs(made, owner, true)
    }
    await mkdir(root, { recursive: true, mode: 0o711 })
    const dirs = new InstanceDirs(root, owner, false)
    for (const name of await readdir(root)) if (MADE_HERE.test(name)) await rm(join(root, name), { recursive: true, force: true })
    return dirs
  }

  /** The folder of an instance; its id (`<installation>:<user>`) made safe and kept recognisable. */
  pathOf(instanceId: string): string {
    const readable = instanceId.toLowerCase().replace(/[^a-z0-9_.-]+/g, '_').slice(0, 40)
    const hash = createHash('sha256').update(instanceId).digest('hex').slice(0, 16)
    return join(this.root, `i-${readable}-${hash}`)
  }

  /** Creates the folder when missing; answers its path. */
  async make(instanceId: string): Promise<string> {
    const path = this.pathOf(instanceId)
    await mkdir(path, { recursive: true, mode: 0o700 })
    if (this.owner !== undefined) await chown(path, this.owner.uid, this.owner.gid)
    return path
  }

  async remove(instanceId: string): Promise<void> {
    await rm(this.pathOf(instanceId), { recursive: true, force: true })
  }

  async close(): Promise<void> {
    if (this.temporary) await rm(this.root, { recursive: true, force: true })
  }

  /** close(), for a process that is exiting and runs no more asynchronous work. */
  closeNow(): void {
    if (this.temporary) rmSync(this.root, { recursive: true, force: true })
  }
}
