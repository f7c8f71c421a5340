import { packageProblems, type Visibility } from '../../formats/package-rules.js'
import { errors } from '../../http/errors.js'

/**
 * The packages a catalogue write stores must be ones a satellite may run as they stand: nothing
 * beyond the named package of its registry (runtime-rules.ts). Checked on every write that stores
 * packages — servers, global or a team's, and their versions — by the visibility of the server
 * they belong to, whichever route wrote them. 400 naming each member at fault; nothing is written.
 */
export function assertEntryRules(packages: readonly unknown[] | null | undefined, visibility: Visibility): void {
  const problems = (packages ?? []).flatMap((item, index) => packageProblems(item, `packages[${index}]`, visibility))
  if (problems.length > 0) {
    throw errors.validation(problems.map((problem) => ({ ...problem, in: 'body' })), 'A package would make a satellite run more than the named package.')
  }
}
