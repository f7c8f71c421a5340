// `npm run dev`: the TypeScript compiler in watch mode (src/, plugins/) next to the server under
// `node --watch`, which restarts it whenever a compiled file it loaded changes. This process owns
// both, so Ctrl-C or a SIGTERM stops both, and either one ending ends the other.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
const build = [tsc, '-b', 'tsconfig.build.json']
const server = 'dist/src/server.js'

// Type errors are reported but do not stop the compiler from writing JavaScript, so the server
// starts anyway; only a missing output stops here.
spawnSync(process.execPath, build, { stdio: 'inherit' })
if (!existsSync(server)) {
  console.error(`${server} was not built; see the compiler's messages above`)
  process.exit(1)
}

const children = [
  spawn(process.execPath, [...build, '--watch', '--preserveWatchOutput'], { stdio: 'inherit' }),
  spawn(process.execPath, ['--enable-source-maps', '--watch', '--watch-preserve-output', server], { stdio: 'inherit' }),
]

let stopping = false
function stop(signal, exitCode) {
  if (stopping) return
  stopping = true
  process.exitCode = exitCode
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal)
  }
}

for (const child of children) child.on('exit', (code) => stop('SIGTERM', code ?? 0))
// A terminal's Ctrl-C reaches the children too; a SIGTERM sent to this process alone is passed on.
process.on('SIGINT', () => stop('SIGINT', 130))
process.on('SIGTERM', () => stop('SIGTERM', 143))
