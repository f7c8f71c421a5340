import { mkdirSync, mkdtempSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { ManagedInstance } from '../../examples/satellite/src/instance.js'
import { Isolation } from '../../examples/satellite/src/isolation.js'
import { mask, maskedForms } from '../../examples/satellite/src/masking.js'
import { SatelliteKeys } from '../../examples/satellite/src/sealing.js'
import type { Instance, PackageLaunch } from '../../examples/satellite/src/types.js'
import { everythingInstance, recordingHooks, sealTo, waitFor } from './support.js'

/** test/fixtures/satellite/print-secret: prints PRINTED_SECRET in those forms to stderr, then exits. */
const FIXTURE = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'satellite', 'print-secret')
/** Its base64 and base64url differ ("+" and "/"); percent-encoding and JSON escaping both change it. */
const SECRET = 'sk"live"/é?&+>~key-2b4d6f'
const FORMS = {
  base64: Buffer.from(SECRET).toString('base64'),
  base64url: Buffer.from(SECRET).toString('base64url'),
  percent: encodeURIComponent(SECRET),
  json: JSON.stringify(SECRET).slice(1, -1),
}

// The default sandbox's folders go with the file.
afterAll(async () => (await Isolation.default()).close())

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
    // An installed package, as a link leaves it: the satellite finds it in node_modules.
    const dir = mkdtempSync(join(tmpdir(), 'sat-mask-'))
    mkdirSync(join(dir, 'node_modules'))
    symlinkSync(FIXTURE, join(dir, 'node_modules', 'print-secret'))
    const keys = await SatelliteKeys.generate()
    const base = everythingInstance()
    const spec: Instance = {
      ...base,
      launch: { ...(base.launch as PackageLaunch), identifier: 'print-secret', version: '1.0.0', package_args: [] },
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
