import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { ManagedInstance } from '../../examples/satellite/src/instance.js'
import { mask, maskedForms } from '../../examples/satellite/src/masking.js'
import { SatelliteKeys } from '../../examples/satellite/src/sealing.js'
import type { Instance, PackageLaunch } from '../../examples/satellite/src/types.js'
import { everythingInstance, recordingHooks, sealTo, waitFor } from './support.js'

/** Its base64 and base64url differ ("+" and "/"); percent-encoding and JSON escaping both change it. */
const SECRET = 'sk"live"/é?&+>~key-2b4d6f'
const FORMS = {
  base64: Buffer.from(SECRET).toString('base64'),
  base64url: Buffer.from(SECRET).toString('base64url'),
  percent: encodeURIComponent(SECRET),
  json: JSON.stringify(SECRET).slice(1, -1),
}

/**
 * A server prints its secret in forms other than the value: inside a Basic credential (base64),
 * a URL (percent-encoded), a JSON line (escaped). The satellite masks each of them in the log
 * lines and messages it sends the backend.
 */
describe('reference satellite: masking secret values', () => {
  const instances: ManagedInstance[] = []
  afterAll(async () => {
    await Promise.all(instances.map((instance) => instance.remove()))
  })

  it('masks each value and its base64, base64url, percent-encoded and JSON-escaped forms, longest first', () => {
    const forms = maskedForms([SECRET, 'short-but-fine', ''])
    expect(forms).toEqual(expect.arrayContaining([SECRET, ...Object.values(FORMS), 'short-but-fine']))
    expect(forms).not.toContain('')
    expect([...forms].sort((a, b) => b.length - a.length)).toEqual(forms)
    const line = `v=${SECRET} b=${FORMS.base64} u=${FORMS.base64url} p=${FORMS.percent} j="${FORMS.json}"`
    expect(mask(line, forms)).toBe('v=[secret] b=[secret] u=[secret] p=[secret] j="[secret]"')
  })

  it('leaves out forms that equal the value or are shorter than 4 characters; the values themselves are masked at any length', () => {
    // "abc": base64 "YWJj" (kept), percent-encoded and JSON-escaped are the value itself.
    expect(maskedForms(['abc']).sort()).toEqual(['YWJj', 'abc'])
    // "a": base64 "YQ==" is 4 long and kept; base64url "YQ" is not.
    expect(maskedForms(['a']).sort()).toEqual(['YQ==', 'a'])
    expect(mask('plain text', maskedForms(['zzzz']))).toBe('plain text')
  })

  it('through an instance: what its server prints to stderr in any of those forms is masked in the log lines', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sat-mask-'))
    const pkg = join(dir, 'node_modules', 'print-secret-mcp')
    mkdirSync(pkg, { recursive: true })
    writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'print-secret-mcp', version: '1.0.0', bin: 'index.js' }))
    // Prints its secret as a careless server would, then exits: it never speaks MCP.
    writeFileSync(join(pkg, 'index.js'), `
      const value = process.env.PRINTED_SECRET
      const bytes = Buffer.from(value)
      console.error('raw=' + value + ' basic=' + bytes.toString('base64') + ' jwt=' + bytes.toString('base64url'))
      console.error('url=https://x.example/?k=' + encodeURIComponent(value) + ' json=' + JSON.stringify({ key: value }))
      process.exit(1)`)
    const keys = await SatelliteKeys.generate()
    const base = everythingInstance()
    const spec: Instance = {
      ...base,
      launch: { ...(base.launch as PackageLaunch), identifier: 'print-secret-mcp', version: '1.0.0', package_args: [] },
      secrets: [{ target: 'env:PRINTED_SECRET', sealed: await sealTo(keys.publicKey, base.instance_id, 'env:PRINTED_SECRET', SECRET) }],
    }
    const recorded = recordingHooks()
    const instance = new ManagedInstance(spec, { keys, packageDirs: [dir], startTimeoutMs: 10_000, hooks: recorded.hooks })
    instances.push(instance)
    instance.update(spec)
    const printed = await waitFor(() => {
      const lines = recorded.logs.filter((line) => line.stream === 'stderr').map((line) => line.text)
      return lines.length >= 2 && lines
    }, 'the two stderr lines')
    expect(printed.slice(0, 2)).toEqual([
      'raw=[secret] basic=[secret] jwt=[secret]',
      'url=https://x.example/?k=[secret] json={"key":"[secret]"}',
    ])
    const everything = JSON.stringify(recorded)
    for (const form of [SECRET, FORMS.base64, FORMS.base64url, FORMS.percent]) expect(everything).not.toContain(form)
  })
})
