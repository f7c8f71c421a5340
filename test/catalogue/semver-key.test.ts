import semver from 'semver'
import { describe, expect, it } from 'vitest'
import { parseVersion } from '../../src/modules/catalogue/semver-key.js'
import { prng } from '../helpers/random.js'

/**
 * The precedence key of a semantic version: accepted texts are strict semver 2.0, and the key's
 * binary order (JS string `<`, code-unit order, equal to byte order for ASCII) is semver
 * precedence. The `semver` library is the oracle, except where it compares numbers as floats
 * (numeric pre-release identifiers beyond 2^53), where the expectation is written out exactly.
 */

const sign = (n: number): number => (n < 0 ? -1 : n > 0 ? 1 : 0)
const keyOf = (version: string): string => {
  const parsed = parseVersion(version)
  if (parsed === null) throw new Error(`refused a valid version: ${version}`)
  return parsed.key
}
const compareKeys = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)


describe('parseVersion: what it accepts', () => {
  const valid = [
    '1.2.3', '0.0.0', '1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-0.3.7', '1.0.0-x.7.z.92', '1.0.0+20130313144700',
    '1.0.0-beta+exp.sha.5114f85', '10.20.30', '1.0.0--', '1.0.0-a-b.-1.0a', '1.0.0+001.build-7', '9007199254740991.0.0',
  ]
  it.each(valid)('accepts %j', (version) => {
    const parsed = parseVersion(version)
    expect(parsed).not.toBeNull()
    expect(parsed!.prerelease).toBe(semver.prerelease(version) !== null)
  })

  const invalid = [
    'v1.2.3', 'V1.2.3', '=1.2.3', ' 1.2.3', '1.2.3 ', '1.2.3\n', '\t1.2.3', '1.2', '1', '01.2.3', '1.02.3', '1.2.03', '1.2.3-01', '1.2.3-alpha.01',
    '1.2.3-', '1.2.3+', '1.2.3-alpha..1', '1.2.3+build..1', '1.2.3-alpha_1', '1.2.3+build_1', '1.2.3.4', '-1.2.3', 'latest', '', '1.2.x', '1.2.*',
    '>=1.2.3', '^1.2.3', '~1.2.3', '1.2.3 - 2.0.0', '１.2.3',
  ]
  it.each(invalid)('refuses %j', (version) => {
    expect(parseVersion(version)).toBeNull()
  })

  it('accepts 128 characters and refuses 129, however valid the version', () => {
    const at128 = `1.0.0-${'a'.repeat(122)}`
    const at129 = `1.0.0-${'a'.repeat(123)}`
    expect([at128.length, at129.length]).toEqual([128, 129])
    expect(semver.valid(at129), 'valid for semver').toBe(at129)
    expect(parseVersion(at128)).not.toBeNull()
    expect(parseVersion(at129)).toBeNull()
    expect(parseVersion(`1.0.0+${'b'.repeat(123)}`)).toBeNull()
  })

  it('flags pre-releases, not build metadata', () => {
    expect(parseVersion('1.0.0')!.prerelease).toBe(false)
    expect(parseVersion('1.0.0+20130313144700')!.prerelease).toBe(false)
    expect(parseVersion('1.0.0-0')!.prerelease).toBe(true)
    expect(parseVersion('1.0.0-beta+exp.sha.5114f85')!.prerelease).toBe(true)
  })
})

describe('parseVersion: the key orders as semver precedence', () => {
  it('follows the precedence chain of semver.org', () => {
    const chain = ['1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-alpha.beta', '1.0.0-beta', '1.0.0-beta.2', '1.0.0-beta.11', '1.0.0-rc.1', '1.0.0']
    for (let i = 0; i + 1 < chain.length; i++) {
      expect(semver.compare(chain[i]!, chain[i + 1]!), `${chain[i]} < ${chain[i + 1]} (oracle)`).toBe(-1)
      expect(keyOf(chain[i]!) < keyOf(chain[i + 1]!), `${chain[i]} < ${chain[i + 1]}`).toBe(true)
    }
    // Shuffled, sorted by key: the chain again.
    const shuffled = [chain[5], chain[0], chain[7], chain[2], chain[4], chain[1], chain[6], chain[3]] as string[]
    expect(shuffled.sort((a, b) => compareKeys(keyOf(a), keyOf(b)))).toEqual(chain)
  })

  it.each([
    ['1.9.0', '1.10.0'],
    ['1.0.9', '1.0.10'],
    ['9.0.0', '10.0.0'],
    ['0.0.0', '0.0.1'],
    ['1.0.0', '2.0.0-rc.1'],
    ['1.99.99', '2.0.0-0'],
    ['1.0.0-rc.1', '1.0.0'],
    ['1.0.0-9', '1.0.0-10'],
    ['1.0.0-1', '1.0.0-a'],
    ['1.0.0-999', '1.0.0--'],
    ['1.0.0-Z', '1.0.0-a'],
    ['1.0.0--', '1.0.0-0a'],
    ['1.0.0-a', '1.0.0-a.0'],
    ['1.0.0-a.b', '1.0.0-a-b'],
    ['1.0.0-alpha.9', '1.0.0-alpha.10'],
    ['1.0.0-alpha.10', '1.0.0-alpha.a'],
    ['999999999999999.0.0', '9007199254740991.0.0'],
  ])('%s < %s', (lower, higher) => {
    expect(semver.compare(lower, higher), 'oracle').toBe(-1)
    expect(keyOf(lower) < keyOf(higher)).toBe(true)
  })

  it('ignores build metadata: equal keys', () => {
    expect(keyOf('1.0.0+20130313144700')).toBe(keyOf('1.0.0'))
    expect(keyOf('1.0.0+a.b.c')).toBe(keyOf('1.0.0+z'))
    expect(keyOf('1.0.0-beta+exp.sha.5114f85')).toBe(keyOf('1.0.0-beta'))
    expect(keyOf('1.0.0-beta+1')).not.toBe(keyOf('1.0.0'))
  })

  it('orders numeric pre-release identifiers beyond 2^53 by value (semver itself compares them as floats)', () => {
    const big = '1.0.0-999999999999999999999'
    expect(parseVersion(big)).toEqual({ key: expect.any(String), prerelease: true })
    // Exact order, written out: by value, numbers below any alphanumeric identifier.
    const ascending = [
      '1.0.0-0',
      '1.0.0-9007199254740991',
      '1.0.0-9007199254740993',
      '1.0.0-99999999999999999999',
      '1.0.0-999999999999999999998',
      '1.0.0-999999999999999999999',
      '1.0.0-1000000000000000000000',
      '1.0.0--',
      '1.0.0-a',
      '1.0.0',
    ]
    for (let i = 0; i + 1 < ascending.length; i++) {
      expect(keyOf(ascending[i]!) < keyOf(ascending[i + 1]!), `${ascending[i]} < ${ascending[i + 1]}`).toBe(true)
    }
    expect(semver.compare(big, '1.0.0-a'), 'oracle: numbers below words').toBe(-1)
    expect(semver.compare(big, '1.0.0-99999999999999999999'), 'oracle: more digits, more value').toBe(1)
  })

  it('orders numeric pre-release identifiers of every length the 128-character limit allows', () => {
    // 1.0.0- leaves 122 characters: numeric identifiers of 1 to 122 digits, each 10^(d-1) (and
    // 2·10^(d-1)), ascending by value; the key must ascend with them.
    const versions: string[] = []
    for (let digits = 1; digits <= 122; digits++) {
      versions.push(`1.0.0-1${'0'.repeat(digits - 1)}`, `1.0.0-2${'0'.repeat(digits - 1)}`)
    }
    versions.push(`1.0.0-${'9'.repeat(122)}`, '1.0.0-a')
    const misordered: string[] = []
    for (let i = 0; i + 1 < versions.length; i++) {
      const [a, b] = [versions[i]!, versions[i + 1]!]
      if (!(keyOf(a) < keyOf(b))) misordered.push(`${a.length - 6} digits (${a.slice(6, 8)}…) ≮ ${b.length - 6} digits (${b.slice(6, 8)}…)`)
    }
    expect(misordered).toEqual([])
  })

  it('agrees with semver.compare on every pair of a few thousand generated versions', () => {
    const random = prng(0x5e3_7e25)
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!
    const chance = (p: number) => random() < p

    // Numbers with 1 to 15 digits (exact as JS numbers, so semver's comparison is exact too),
    // often from a small pool so that equal and neighbouring values meet.
    const number = (): string => {
      if (chance(0.5)) return pick(['0', '1', '2', '9', '10', '11', '19', '99', '100', '101', '999', '1000'])
      const digits = 1 + Math.floor(random() * 15)
      let text = String(1 + Math.floor(random() * 9))
      for (let i = 1; i < digits; i++) text += String(Math.floor(random() * 10))
      return text
    }
    const IDENTIFIER_CHARS = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-'
    const NON_DIGITS = 'AZaz-bxY'
    const word = (): string => {
      if (chance(0.6)) return pick(['alpha', 'beta', 'rc', 'a', 'b', 'A', 'Z', 'z', '-', '--', 'a-b', 'a-', '-a', 'x-1', '1a', '0a', '9z', '-1', '0-', 'alpha-beta', 'rc-1', 'aa', 'Alpha'])
      const length = 1 + Math.floor(random() * 8)
      const chars = Array.from({ length }, () => pick([...IDENTIFIER_CHARS]))
      if (chars.every((c) => /\d/.test(c))) chars[Math.floor(random() * length)] = pick([...NON_DIGITS])
      return chars.join('')
    }
    const build = (): string => Array.from({ length: 1 + Math.floor(random() * 3) }, () => (chance(0.5) ? pick(['001', '0', 'sha', 'exp', 'build-7']) : word())).join('.')

    const generated: string[] = []
    while (generated.length < 3000) {
      let version: string
      if (generated.length > 0 && chance(0.1)) {
        // The same precedence as an earlier one, with other build metadata.
        version = `${generated[Math.floor(random() * generated.length)]!.split('+')[0]}+${build()}`
      } else {
        const core = chance(0.3) ? `${pick(['0', '1', '2'])}.${pick(['0', '1', '9', '10'])}.${pick(['0', '1', '9', '10'])}` : `${number()}.${number()}.${number()}`
        const pre = chance(0.35) ? '' : `-${Array.from({ length: 1 + Math.floor(random() * 4) }, () => (chance(0.45) ? number() : word())).join('.')}`
        version = `${core}${pre}${chance(0.25) ? `+${build()}` : ''}`
      }
      if (version.length > 128) continue
      // semver.valid answers the version without its build metadata.
      if (semver.valid(version) !== version.split('+')[0]) throw new Error(`the generator made an invalid version: ${version}`)
      generated.push(version)
    }

    const parsedKeys = generated.map((version) => parseVersion(version))
    const refused = generated.filter((_, i) => parsedKeys[i] === null)
    expect(refused).toEqual([])
    const flagMismatches = generated.filter((version, i) => parsedKeys[i]!.prerelease !== (semver.prerelease(version) !== null))
    expect(flagMismatches).toEqual([])

    const oracle = generated.map((version) => new semver.SemVer(version))
    const keys = parsedKeys.map((parsed) => parsed!.key)
    const mismatches: string[] = []
    let ties = 0
    let pairs = 0
    for (let i = 0; i < generated.length; i++) {
      for (let j = i + 1; j < generated.length; j++) {
        pairs++
        const expected = oracle[i]!.compare(oracle[j]!)
        if (expected === 0) ties++
        if (sign(compareKeys(keys[i]!, keys[j]!)) !== expected && mismatches.length < 20) {
          mismatches.push(`${generated[i]} vs ${generated[j]}: key ${compareKeys(keys[i]!, keys[j]!)}, semver ${expected}`)
        }
      }
    }
    expect(mismatches).toEqual([])
    // The generator did produce what the property is about.
    expect(pairs).toBe((3000 * 2999) / 2)
    expect(ties).toBeGreaterThan(100)
    expect(generated.filter((version) => semver.prerelease(version) !== null).length).toBeGreaterThan(1000)
    expect(generated.filter((version) => semver.prerelease(version) === null).length).toBeGreaterThan(500)
  })
})
