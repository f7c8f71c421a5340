/** What a satellite tells about itself at registration. */
export interface SatelliteSystemInfo { os: string; arch: string; node_version: string; memory_mb: number }

/** What a satellite reports with each heartbeat. */
export interface SatelliteMetrics { cpu_usage_percent: number; memory_usage_mb: number; uptime_seconds?: number }

/** A tool an instance serves, as its satellite reported it (the MCP `Tool`, in this API's spelling). */
export interface ReportedTool {
  name: string
  title?: string
  description?: string
  input_schema: Record<string, unknown>
  output_schema?: Record<string, unknown>
  annotations?: Record<string, unknown>
}

/**
 * The spec hash under which the backend itself records an instance it left out of its satellite's
 * document because it could not be resolved (phase `failed`, the reason as the message). The
 * observed-state row is where an instance's phase for the current spec lives, so the status of the
 * installation is derived from it like any report, with no column of its own; a real spec hash is
 * an unpadded base64url HMAC-SHA-256 (43 characters), which this word can never be.
 */
export const UNRESOLVED_SPEC_HASH = 'unresolved'

/** What a satellite last reported of one instance, as readers of its installation see it. */
export interface ReportedState {
  phase: 'starting' | 'running' | 'degraded' | 'failed' | 'stopped'
  message: string | null
  /** The installation's spec_revision the report was about. */
  specRevision: number
  toolsCount: number
  /** Recorded by the backend, not reported by the satellite: the instance could not be resolved (`message` says why). */
  unresolved: boolean
}
