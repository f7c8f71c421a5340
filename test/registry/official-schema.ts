import { readFileSync } from 'node:fs'
import { Ajv } from 'ajv'
import addFormats from 'ajv-formats'

/**
 * The MCP Registry's published schema of `server.json` (revision 2025-12-11), kept as a fixture
 * (test/fixtures/registry), compiled the way a registry client would: JSON Schema draft-07 with
 * the standard formats. The tests hold this service's documents to it.
 */
export const OFFICIAL_SCHEMA_TEXT = readFileSync(new URL('../fixtures/registry/server.schema.2025-12-11.json', import.meta.url), 'utf8')

const validate = addFormats.default(new Ajv({ allErrors: true, strict: false })).compile(JSON.parse(OFFICIAL_SCHEMA_TEXT) as object)

/** The official schema's complaints about a document (empty when it is valid), for readable failures. */
export function officialProblems(document: unknown): string[] {
  return validate(document) ? [] : (validate.errors ?? []).map((error) => `${error.instancePath || '(document)'} ${error.message ?? ''}`)
}
