import { createHash } from 'node:crypto'
import canonicalize from 'canonicalize'

/**
 * A tool as an MCP server declared it, in the platform's snake_case spelling (`inputSchema` →
 * `input_schema`, `outputSchema` → `output_schema`). `title` is display only and not part of the
 * definition a team approves.
 */
export interface ToolDefinition {
  name: string
  description?: string
  input_schema: Record<string, unknown>
  output_schema?: Record<string, unknown>
  annotations?: Record<string, unknown>
}

/**
 * The definition hash of a tool: lowercase hex SHA-256 of the RFC 8785 (JSON Canonicalization
 * Scheme) text of `{name, description, input_schema, output_schema, annotations}`, members the
 * server left out omitted (never written as null). Key order, whitespace and how a database stores
 * the JSON never change it; any change to what the tool says it does, or to its schemas, does.
 * The reference satellite computes the same hash over the SDK's tool type; a test keeps the two equal.
 */
export function toolDefinitionHash(tool: ToolDefinition): string {
  return createHash('sha256').update(canonicalize(definitionOf(tool)) ?? '', 'utf8').digest('hex')
}

/** The members that make up a definition, absent ones left out (an extra member such as `title` is dropped). */
export function definitionOf(tool: ToolDefinition): ToolDefinition {
  const out: ToolDefinition = { name: tool.name, input_schema: tool.input_schema }
  if (tool.description !== undefined) out.description = tool.description
  if (tool.output_schema !== undefined) out.output_schema = tool.output_schema
  if (tool.annotations !== undefined) out.annotations = tool.annotations
  return out
}
