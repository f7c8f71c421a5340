import { envNameOfKey, envNameProblem } from '../../formats/runtime-rules.js'
import type { FieldProblem } from '../../http/errors.js'
import type { InstallationInput } from './inputs.js'

/**
 * The values an installation's inputs take: always text, checked against the input's `choices` and
 * `format` when a team admin or a member sets one (inputs.ts says what the inputs are).
 */

/** Why a value cannot be set for an input. */
export interface InputProblem {
  key: string
  /** A sentence naming the input and what is wrong with the value. */
  message: string
}

/**
 * A decimal number as the format writes numbers, which is JSON's number grammar (RFC 8259 §6):
 * optional minus, no leading zeros, optional fraction and exponent; no `NaN`, `Infinity`, hex or
 * spaces.
 */
const DECIMAL_NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/

/** A path longer than this fits no common file system (Linux's PATH_MAX is 4096 bytes). */
const MAX_FILEPATH = 4096

/** Control characters (including NUL and line breaks) in a path are a mistake or an attack, on every system. */
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/

const quoted = (value: string): string => JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value)

/**
 * Whether `value` may be set for `input`; null when it may, else a sentence naming the input and
 * the problem. With `choices`, the value must be one of them exactly (the publisher's list is the
 * whole of what the server understands). Else by `format`: `number` a decimal number, `boolean`
 * `true` or `false` (the format's own spelling), `filepath` a path (not checked against any disk:
 * it is a path on the machine that runs the server), `string` any text. A required input does not
 * take the empty string.
 */
export function checkValue(input: Pick<InstallationInput, 'key' | 'required' | 'choices' | 'format'>, value: unknown): InputProblem | null {
  const problem = (message: string): InputProblem => ({ key: input.key, message: `${input.key} ${message}.` })
  if (typeof value !== 'string') return problem('must be given as text (a JSON string), whatever its format')
  if (input.choices !== undefined && input.choices.length > 0) {
    return input.choices.includes(value) ? null : problem(`must be one of ${input.choices.map(quoted).join(', ')}; ${quoted(value)} is not one of them`)
  }
  if (value === '' && input.required) return problem('is required and must not be empty')
  switch (input.format) {
    case 'number':
      return DECIMAL_NUMBER.test(value) ? null : problem(`must be a decimal number such as 8080 or 0.5; ${quoted(value)} is not`)
    case 'boolean':
      return value === 'true' || value === 'false' ? null : problem(`must be true or false (in lower case); ${quoted(value)} is neither`)
    case 'filepath':
      if (value === '') return null
      if (CONTROL_CHARACTER.test(value)) return problem('must be a file path without control characters (no NUL, tab or line break)')
      return value.length <= MAX_FILEPATH ? null : problem(`must be a file path of at most ${MAX_FILEPATH} characters`)
    default:
      return null
  }
}

/** Values sent for inputs, by key: text, or null to unset. */
export type ValueMap = Record<string, string | null>

/** Every problem of a set of values, each naming its key; empty when all may be written. */
export function checkValues(inputs: readonly InstallationInput[], values: ValueMap, scope: 'team' | 'user'): FieldProblem[] {
  const problems: FieldProblem[] = []
  for (const [key, value] of Object.entries(values)) {
    const field = `values.${key}`
    const input = inputs.find((each) => each.key === key)
    const envName = envNameOfKey(key)
    const loader = envName === null ? null : envNameProblem(envName)
    if (input === undefined) problems.push({ field, message: `${key} is not an input of this installation`, in: 'body' })
    // A connection is made by signing in (POST …/connections), never set as a value.
    else if (input.kind === 'oauth') problems.push({ field, message: `${key} is a connection: it is made by signing in (POST …/connections), not set as a value`, in: 'body' })
    // An input of an entry written before the runtime rules: it exists, but takes no value (the
    // satellite's document never carries it either); unsetting one is allowed.
    else if (loader !== null && value !== null) problems.push({ field, message: `${key} cannot be given a value: ${loader}`, in: 'body' })
    else if (input.scope !== scope) {
      problems.push({
        field, in: 'body',
        message: scope === 'team' ? `${key} is set by each member for themselves (PUT …/my-values)` : `${key} is set by the team's admins for the whole team (PUT …/values)`,
      })
    } else if (value !== null) {
      const problem = checkValue(input, value)
      if (problem !== null) problems.push({ field, message: problem.message, in: 'body' })
    }
  }
  return problems
}
