/** What a satellite tells about itself at registration. */
export interface SatelliteSystemInfo { os: string; arch: string; node_version: string; memory_mb: number }

/** What a satellite reports with each heartbeat. */
export interface SatelliteMetrics { cpu_usage_percent: number; memory_usage_mb: number; uptime_seconds?: number }
