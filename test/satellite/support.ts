/**
 * Pieces shared by the reference satellite's tests: sealing a secret the way the backend does
 * (from the wire contract, independently of the satellite's code), an instance document for the
 * installed `@modelcontextprotocol/server-everything`, hooks that record what an instance
 * reports, and polling for a condition.
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { Aes256Gcm, CipherSuite, HkdfSha256 } from '@hpke/core'
import { DhkemX25519HkdfSha256 } from '@hpke/dhkem-x25519'
import type { Tool } from '@modelcontextprotocol/sdk/types.js'
import type { InstanceHooks, ManagedInstance } from '../../examples/satellite/src/instance.js'
import type { Instance, Phase } from '../../examples/satellite/src/types.js'

const require = createRequire(import.meta.url)
export const EVERYTHING = '@modelcontextprotocol/server-everything'
/** The version installed in the repository's node_modules (a devDependency). */
export const EVERYTHING_VERSION = (JSON.parse(readFileSync(require.resolve(`${EVERYTHING}/package.json`), 'utf8')) as { version: string }).version

const bytes = (view: Uint8Array): ArrayBuffer => view.buffer.slice(view.byteOffset, view.byteOffset + view.byteLength) as ArrayBuffer

/**
 * HPKE base mode, DHKEM(X25519, HKDF-SHA256) / HKDF-SHA256 / AES-256-GCM, info
 * "service-satellite-secret", aad "<instance id>\n<target>", answered as base64url(enc || ct):
 * what the backend sends in `secrets[].sealed`.
 */
export async function sealTo(publicKey: string, instanceId: string, target: string, value: string): Promise<string> {
  const suite = new CipherSuite({ kem: new DhkemX25519HkdfSha256(), kdf: new HkdfSha256(), aead: new Aes256Gcm() })
  const recipientPublicKey = await suite.kem.deserializePublicKey(bytes(Buffer.from(publicKey, 'base64url')))
  const { enc, ct } = await suite.seal(
    { recipientPublicKey, info: bytes(new TextEncoder().encode('service-satellite-secret')) },
    bytes(new TextEncoder().encode(value)),
    bytes(new TextEncoder().encode(`${instanceId}\n${target}`)),
  )
  return Buffer.concat([Buffer.from(enc), Buffer.from(ct)]).toString('base64url')
}

let sequence = 0

/** A shared (team) instance of server-everything over stdio, desired running. */
export function everythingInstance(overrides: Partial<Instance> = {}): Instance {
  sequence += 1
  const installationId = overrides.installation_id ?? `inst-${process.pid}-${sequence}`
  return {
    instance_id: `${installationId}:team`,
    installation_id: installationId,
    team_id: 'team-a',
    user_id: null,
    name: 'everything',
    endpoint_path: `/mcp/${installationId}`,
    desired: 'running',
    spec_hash: 'spec-1',
    restart_generation: 0,
    launch: {
      kind: 'package',
      registry_type: 'npm',
      identifier: EVERYTHING,
      version: EVERYTHING_VERSION,
      runtime_hint: 'npx',
      runtime_args: [],
      package_args: ['stdio'],
      env: {},
      transport: { type: 'stdio' },
    },
    secrets: [],
    disabled_tools: [],
    ...overrides,
  }
}

export interface Recorded {
  hooks: InstanceHooks
  phases: Array<{ phase: Phase; message: string | undefined }>
  logs: Array<{ instanceId: string; stream: string; text: string }>
  tools: Map<string, Tool[]>
}

export function recordingHooks(): Recorded {
  const recorded: Recorded = {
    phases: [],
    logs: [],
    tools: new Map(),
    hooks: {
      phase: (instance: ManagedInstance) => recorded.phases.push({ phase: instance.phase, message: instance.message }),
      log: (instanceId, stream, text) => recorded.logs.push({ instanceId, stream, text }),
      tools: (instanceId, tools) => recorded.tools.set(instanceId, tools),
    },
  }
  return recorded
}

/** Polls `check` every 20 ms until it returns a value other than undefined/false. */
export async function waitFor<T>(check: () => T | undefined | false | Promise<T | undefined | false>, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined && value !== false) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** Whether a process with that pid exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

export { descendants } from '../helpers/processes.js'
