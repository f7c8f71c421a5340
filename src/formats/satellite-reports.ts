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
