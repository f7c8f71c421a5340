import { describe, expect, it } from 'vitest'
import { isoTime } from '../../src/lib/iso-time.js'

/** Every answer's timestamps go through isoTime: it must write exactly what toISOString writes. */
describe('isoTime', () => {
  const same = (ms: number) => expect(isoTime(new Date(ms)), `at ${ms}`).toBe(new Date(ms).toISOString())

  it('writes what toISOString writes at the edges of days, months, years, centuries and the four-digit years', () => {
    const edges = [
      0, -1, 1, 86_399_999, 86_400_000, -86_400_000, -86_400_001,
      Date.UTC(2000, 1, 29, 12), Date.UTC(2000, 2, 1) - 1, Date.UTC(1900, 1, 28, 23, 59, 59, 999), Date.UTC(1900, 2, 1),
      Date.UTC(2100, 1, 28), Date.UTC(2100, 2, 1), Date.UTC(2024, 11, 31, 23, 59, 59, 999), Date.UTC(2025, 0, 1),
      Date.UTC(1600, 1, 29), Date.UTC(1601, 0, 1) - 1, Date.UTC(1969, 11, 31, 23, 59, 59, 999),
      -62_167_219_200_000, -62_167_219_200_001, -62_167_219_199_999, 253_402_300_799_999, 253_402_300_800_000,
      Date.UTC(10, 0, 1) - 1, 8.64e15, -8.64e15,
    ]
    for (const ms of edges) same(ms)
    expect(isoTime(new Date(Date.UTC(2026, 10, 26, 8, 5, 3, 7)))).toBe('2026-11-26T08:05:03.007Z')
    expect(isoTime(new Date(-62_167_219_200_000))).toBe('0000-01-01T00:00:00.000Z')
    expect(isoTime(new Date(253_402_300_800_000))).toBe('+010000-01-01T00:00:00.000Z')
  })

  it('writes what toISOString writes for 200 000 instants spread over its whole range', () => {
    let seed = 0x2f6b_1d3
    const random = () => ((seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0) / 2 ** 32)
    // Years 0000–9999, the ones written by arithmetic; then this century and the next; then anywhere.
    for (let i = 0; i < 100_000; i++) same(Math.floor(-62_167_219_200_000 + random() * 315_569_520_000_000))
    for (let i = 0; i < 80_000; i++) same(Math.floor(random() * 4.2e12))
    for (let i = 0; i < 20_000; i++) same(Math.floor((random() * 2 - 1) * 8.64e15))
  })

  it('throws a RangeError for an invalid date, as toISOString does', () => {
    expect(() => isoTime(new Date(Number.NaN))).toThrow(RangeError)
  })
})
