/**
 * The definition hash of a tool: what the backend pins when a team admin approves a tool, and
 * what this satellite compares the live definition with before it offers or serves that tool.
 *
 * It is the lowercase hex SHA-256 of the RFC 8785 (JSON Canonicalization Scheme) form of
 * `{name, description, input_schema, output_schema, annotations}`, with each member as the
 * server declared it and a member the server left out omitted. Canonical JSON makes the hash
 * independent of key order and of how the definition was stored or sent. The backend computes
 * the same hash over the reported tools; a test holds the two equal.
 */
import { createHash } from 'node:crypto'
import type { Tool } from '@modelcontextprotocol/sdk/types.js'
import canonicalize from 'canonicalize'

/** The members of a tool that make up its definition, named as the backend names them. */
export interface ToolDefinition {
  name: string
  description?: string
  input_schema: unknown
  output_schema?: unknown
  annotations?: unknown
}

/** The definition of a tool as an MCP server declared it (`inputSchema` → `input_schema`, …). */
export function toolDefinition(tool: Pick<Tool, 'name' | 'description' | 'inputSchema' | 'outputSchema' | 'annotations'>): ToolDefinition {
  return {
    name: tool.name,
    ...(tool.description === undefined ? {} : { description: tool.description }),
    input_schema: tool.inputSchema,
    ...(tool.outputSchema === undefined ? {} : { output_schema: tool.outputSchema }),
    ...(tool.annotations === undefined ? {} : { annotations: tool.annotations }),
  }
}

/** The lowercase hex SHA-256 of the canonical JSON of a definition. */
export function definitionHash(definition: ToolDefinition): string {
  const text = canonicalize(definition)
  if (text === undefined) throw new Error('a tool definition must be JSON')
  return createHash('sha256').update(text, 'utf8').digest('hex')
}

/** The definition hash of a tool as an MCP server declared it. */
export function toolDefinitionHash(tool: Pick<Tool, 'name' | 'description' | 'inputSchema' | 'outputSchema' | 'annotations'>): string {
  return definitionHash(toolDefinition(tool))
}
