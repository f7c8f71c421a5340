import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { ChildTransport } from '../examples/satellite/src/child-transport.js'
import { defaultIsolationSettings, Isolation } from '../examples/satellite/src/isolation.js'
import { packageCommand } from '../examples/satellite/src/launch.js'
import type { PackageLaunch } from '../examples/satellite/src/types.js'
import { descendants, isNode, rssMbOf } from '../test/helpers/processes.js'

/**
 * `npm run build && node dist/bench/sandbox.js`: what the reference satellite's process sandbox
 * costs one instance of server-everything (installed in node_modules, so no download is
 * measured): the time from spawning it to its answer to MCP `initialize`, and the resident
 * memory of its process tree (bubblewrap's two small processes included) once it answered its
 * tool list, bare (ISOLATION=none) and sandboxed, started alternately (this machine's speed
 * drifts within minutes). Figures, not assertions.
 *   BENCH_SANDBOX_STARTS (default 10)   starts of each
 */

const STARTS = Number(process.env.BENCH_SANDBOX_STARTS ?? 10)
const EVERYTHING = '@modelcontextprotocol/server-everything'

interface Sample {
  startMs: number
  /** The whole tree the satellite started. */
  treeMb: number
  /** The server's own node process. */
  serverMb: number
}

const launch: PackageLaunch = {
  kind: 'package', registry_type: 'npm', identifier: EVERYTHING, version: null, runtime_hint: 'npx',
  runtime_args: [], package_args: ['stdio'], env: {}, transport: { type: 'stdio' },
}

async function once(isolation: Isolation, index: number): Promise<Sample> {
  const command = await packageCommand(launch, new Map(), { packageDirs: [process.cwd()] })
  const id = `bench-${index}`
  const child = await isolation.child(command, id, 'full')
  const transport = new ChildTransport({ ...child, onLine: () => undefined })
  const client = new Client({ name: 'bench', version: '1' }, { capabilities: {} })
  const began = performance.now()
  await client.connect(transport)
  const startMs = performance.now() - began
  await client.listTools()
  const tree = [transport.pid!, ...descendants(transport.pid!)]
  const sizes = tree.map((pid) => ({ pid, mb: rssMbOf(pid), node: isNode(pid) }))
  await client.close()
  await isolation.release(id)
  return { startMs, treeMb: sizes.reduce((sum, size) => sum + size.mb, 0), serverMb: sizes.filter((size) => size.node).reduce((sum, size) => sum + size.mb, 0) }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const max = (values: number[]) => Math.max(...values)
const fixed = (value: number) => value.toFixed(1)

const bare = await Isolation.start({ ...defaultIsolationSettings(), mode: 'none' })
const sandboxed = await Isolation.start(defaultIsolationSettings())
if (sandboxed.problem !== undefined) throw new Error(sandboxed.problem)
const samples: Record<'bare' | 'sandboxed', Sample[]> = { bare: [], sandboxed: [] }
// One of each first, not counted: the first start reads node and the package from disk.
await once(bare, -1)
await once(sandboxed, -2)
for (let index = 0; index < STARTS; index += 1) {
  samples.bare.push(await once(bare, index))
  samples.sandboxed.push(await once(sandboxed, index))
}
await bare.close()
await sandboxed.close()

console.log(`server-everything over stdio, ${STARTS} starts each (median / max)`)
console.log('             spawn → initialize answered   RSS, whole tree   RSS, server')
for (const [name, list] of Object.entries(samples)) {
  const start = list.map((sample) => sample.startMs)
  const tree = list.map((sample) => sample.treeMb)
  const server = list.map((sample) => sample.serverMb)
  console.log(`  ${name.padEnd(10)} ${`${fixed(median(start))} / ${fixed(max(start))} ms`.padStart(27)}   ${`${fixed(median(tree))} MiB`.padStart(15)}   ${`${fixed(median(server))} MiB`.padStart(11)}`)
}
