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
  annotations?: Record<string, unknown>
}

/** What a satellite last reported of one instance, as readers of its installation see it. */
export interface ReportedState {
  phase: 'starting' | 'running' | 'degraded' | 'failed' | 'stopped'
  message: string | null
  /** The installation's spec_revision the report was about. */
  specRevision: number
  toolsCount: number
}
