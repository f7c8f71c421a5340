import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import { afterAll, describe, expect, it } from 'vitest'
import { LineBatch } from '../../src/http/log-batch.js'

/** A sink that keeps what it was given, write by write. */
function recordingSink() {
  const writes: string[] = []
  let syncFlushes = 0
  return { writes, syncFlushes: () => syncFlushes, write: (chunk: string) => writes.push(chunk), flushSync: () => void syncFlushes++ }
}

describe('log lines gathered in chunks', () => {
  const dir = mkdtempSync(join(tmpdir(), 'log-batch-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('holds lines until a chunk is full, then writes them at once, in order', () => {
    const sink = recordingSink()
    const batch = new LineBatch(sink, 20)
    batch.write('one 123\n')
    batch.write('two 456\n')
    expect(sink.writes).toEqual([])
    batch.write('three 789\n')
    expect(sink.writes).toEqual(['one 123\ntwo 456\nthree 789\n'])
    batch.write('four\n')
    expect(sink.writes).toHaveLength(1)
  })

  it('writes what is pending on flush, and nothing when nothing is', () => {
    const sink = recordingSink()
    const batch = new LineBatch(sink, 4096)
    let called = 0
    batch.flush(() => called++)
    expect(sink.writes).toEqual([])
    batch.write('a line\n')
    batch.flush(() => called++)
    batch.flush()
    expect(sink.writes).toEqual(['a line\n'])
    expect(called).toBe(2)
  })

  it('at exit, writes the pending lines and has the sink write what it holds', () => {
    const sink = recordingSink()
    const batch = new LineBatch(sink, 4096)
    batch.write('last words\n')
    batch.flushSync()
    expect(sink.writes).toEqual(['last words\n'])
    expect(sink.syncFlushes()).toBe(1)
  })

  it("carries pino's lines to a file through sonic-boom, every one whole and in order", () => {
    const file = join(dir, 'out.log')
    const batch = new LineBatch(pino.destination({ dest: file, sync: true }), 256)
    const logger = pino({ base: null, timestamp: false }, batch)
    for (let index = 0; index < 50; index++) logger.info({ index, text: 'naïve ✓ "quoted"' }, 'line')
    batch.flushSync()
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n').map((line) => JSON.parse(line) as { index: number; text: string })
    expect(lines.map((line) => line.index)).toEqual(Array.from({ length: 50 }, (_, index) => index))
    expect(lines.every((line) => line.text === 'naïve ✓ "quoted"')).toBe(true)
  })
})
