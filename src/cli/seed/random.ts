/** sfc32 seeded through splitmix32: small, fast, and good enough for test data. */
export class SeededRandom {
  private a: number
  private b: number
  private c: number
  private d: number

  constructor(seed: number) {
    let s = seed >>> 0
    const next = () => {
      s = (s + 0x9e3779b9) >>> 0
      let z = s
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b)
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35)
      return (z ^ (z >>> 16)) >>> 0
    }
    this.a = next()
    this.b = next()
    this.c = next()
    this.d = next()
    for (let i = 0; i < 12; i++) this.next()
  }

  /** In [0, 1). */
  next(): number {
    const t = (((this.a + this.b) >>> 0) + this.d) >>> 0
    this.d = (this.d + 1) >>> 0
    this.a = this.b ^ (this.b >>> 9)
    this.b = (this.c + (this.c << 3)) >>> 0
    this.c = ((this.c << 21) | (this.c >>> 11)) >>> 0
    this.c = (this.c + t) >>> 0
    return t / 4_294_967_296
  }

  /** In [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n)
  }

  between(min: number, max: number): number {
    return min + this.int(max - min + 1)
  }

  chance(p: number): boolean {
    return this.next() < p
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!
  }

  /** `n` distinct items (fewer when there are not that many). */
  sample<T>(items: readonly T[], n: number): T[] {
    const pool = [...items]
    const out: T[] = []
    while (out.length < n && pool.length > 0) out.push(pool.splice(this.int(pool.length), 1)[0]!)
    return out
  }

  weighted<T>(items: readonly T[], weight: (item: T) => number, total: number): T {
    let r = this.next() * total
    for (const item of items) {
      r -= weight(item)
      if (r < 0) return item
    }
    return items[items.length - 1]!
  }
}
