/** One sample of a Prometheus text exposition. */
export interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*'
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)(?: -?\\d+)?$`)
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(?:,|$)/y
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped'])
const SUFFIXES = ['_bucket', '_sum', '_count']

/**
 * Parses the text exposition format 0.0.4, strictly: every line is a HELP or TYPE comment or a
 * sample of a metric whose TYPE came before it. Throws, naming the line, otherwise.
 */
export function parseExposition(text: string): Sample[] {
  const typed = new Map<string, string>()
  const samples: Sample[] = []
  for (const [index, line] of text.split('\n').entries()) {
    const fail = (problem: string) => new Error(`line ${index + 1} ${problem}: ${JSON.stringify(line)}`)
    if (line === '') continue
    if (line.startsWith('#')) {
      const type = new RegExp(`^# TYPE (${NAME}) (\\w+)$`).exec(line)
      if (type !== null) {
        if (!TYPES.has(type[2]!)) throw fail('has an unknown type')
        typed.set(type[1]!, type[2]!)
      } else if (!new RegExp(`^# HELP ${NAME} `).test(line)) {
        throw fail('is neither HELP nor TYPE')
      }
      continue
    }
    const match = SAMPLE.exec(line)
    if (match === null) throw fail('is not a sample')
    const [, name, labelText = '', rawValue] = match
    const family = typed.has(name!) ? name! : SUFFIXES.map((suffix) => name!.endsWith(suffix) ? name!.slice(0, -suffix.length) : '').find((base) => typed.get(base) === 'histogram' || typed.get(base) === 'summary')
    if (family === undefined) throw fail('has no TYPE before it')
    const labels: Record<string, string> = {}
    LABEL.lastIndex = 0
    while (LABEL.lastIndex < labelText.length) {
      const label = LABEL.exec(labelText)
      if (label === null) throw fail('has malformed labels')
      labels[label[1]!] = label[2]!.replace(/\\(.)/g, (_, char: string) => (char === 'n' ? '\n' : char))
    }
    const value = parseValue(rawValue!)
    if (value === null) throw fail('has a value that is not a number')
    samples.push({ name: name!, labels, value })
  }
  return samples
}

/** A value as Prometheus reads it (Go's ParseFloat): NaN and infinities in any case, which prom-client uses (`Nan`). */
function parseValue(raw: string): number | null {
  if (/^nan$/i.test(raw)) return NaN
  const infinite = /^([+-]?)inf(inity)?$/i.exec(raw)
  if (infinite !== null) return infinite[1] === '-' ? -Infinity : Infinity
  return /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(raw) ? Number(raw) : null
}

/** The value of the sample named `name` whose labels include `labels`; undefined when there is none. */
export function valueOf(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  return samples.find((sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value))?.value
}
