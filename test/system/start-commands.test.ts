import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { projectRoot } from '../../src/paths.js'

/**
 * `npm start` (which builds first), `npm run start:prod` and the container image (which do not)
 * must run the service the same way: the environment `npm start` sets tunes memory and the
 * benchmark measures it, so a production start without it would not be what was measured.
 */
const scripts = (JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts

/** `A=1 B=2 node --flag file.js` → the assignments and node's arguments. */
function command(line: string): { env: Record<string, string>; args: string[] } {
  const words = line.trim().split(/\s+/)
  const node = words.indexOf('node')
  expect(node, `"${line}" runs node`).toBeGreaterThanOrEqual(0)
  return {
    env: Object.fromEntries(words.slice(0, node).map((word) => word.split('=', 2) as [string, string])),
    args: words.slice(node + 1),
  }
}

/** The final stage of the Dockerfile: its ENV assignments, USER, HEALTHCHECK and CMD. */
function runtimeStage(): { env: Record<string, string>; user: string | undefined; healthcheck: string; cmd: string[] } {
  const text = readFileSync(join(projectRoot, 'Dockerfile'), 'utf8')
  const instructions = text.replace(/\\\n/g, ' ').split('\n').map((line) => line.trim()).filter((line) => line !== '' && !line.startsWith('#'))
  const stage = instructions.slice(instructions.findLastIndex((line) => line.startsWith('FROM ')))
  const env: Record<string, string> = {}
  for (const line of stage.filter((each) => each.startsWith('ENV '))) {
    for (const pair of line.slice(4).trim().split(/\s+/)) {
      const [key, value] = pair.split('=', 2) as [string, string]
      env[key] = value
    }
  }
  const last = (keyword: string) => stage.findLast((line) => line.startsWith(`${keyword} `))?.slice(keyword.length + 1).trim()
  return { env, user: last('USER'), healthcheck: last('HEALTHCHECK') ?? '', cmd: JSON.parse(last('CMD') ?? '[]') as string[] }
}

describe('start commands', () => {
  it('npm run start:prod runs what npm start runs, without building first', () => {
    expect(command(scripts['start:prod']!)).toEqual(command(scripts.start!))
    expect(scripts['prestart:prod']).toBeUndefined()
    expect(scripts.prestart).toContain('npm run build')
  })

  it('the image runs npm start\'s command and environment, as a non-root user, listening on every interface, with a health check', () => {
    const start = command(scripts.start!)
    const image = runtimeStage()
    expect(image.cmd).toEqual(['node', ...start.args])
    expect(image.env).toMatchObject({ ...start.env, HOST: '0.0.0.0', NODE_ENV: 'production' })
    expect(image.user).toBeDefined()
    expect(['root', '0']).not.toContain(image.user)
    expect(image.healthcheck).toContain('/api/health')
  })
})
