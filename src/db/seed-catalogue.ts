import { getTableColumns, getTableName, sql, type SQL, type Table } from 'drizzle-orm'
import { randomBytes } from 'node:crypto'
import { v7 as uuidv7 } from 'uuid'
import { normalizePackages, type ServerPackage, type ServerRemote } from '../modules/catalogue/entries.js'
import { parseVersion } from '../modules/catalogue/semver-key.js'
import { slugify } from '../lib/slug.js'
import { catalogueTransaction } from './repositories/catalogue-revision.js'
import { caseKey } from './repositories/server-filters.js'
import type { Database, Db } from './types.js'

/**
 * A realistic, varied and deterministic catalogue of global MCP servers, written straight to the
 * database in batches: for load tests, benchmarks and local development (`npm run seed:catalogue`).
 *
 * Every row keeps the rules the API keeps: slugs unique and derived from the name like the service
 * derives them (`name`, `name-2`, …, never a reserved path segment), tags normalized and mirrored
 * in mcp_server_tags, sort_name the lowercased name, packages and remotes valid per their schemas
 * (environment variables with their flags spelled out), updated_at never before created_at, and
 * versions with their semver precedence key and the latest mark (the highest active release, else
 * the highest active pre-release) matching the server's latest_version.
 *
 * The same seed gives the same servers (names, descriptions, tags, …); ids are fresh UUIDv7 from
 * each server's creation time, and timestamps are relative to `now`. Servers are added to whatever
 * the catalogue holds: slugs taken already get the next free suffix, and a slug taken meanwhile by
 * someone else skips that server (ON CONFLICT DO NOTHING) instead of failing the batch.
 *
 * Each batch is one catalogue transaction (the revision row first, like every catalogue writer)
 * with one insert statement per table; the database's triggers keep the full-text index and the
 * catalogue revision up to date as for any other write.
 */

export interface SeedCatalogueOptions {
  /** How many servers to add. */
  servers: number
  /** How many categories of the built-in list to use (created when missing); 24 by default. */
  categories?: number
  /** The PRNG seed; 42 by default. */
  seed?: number
  /** 0–3 versions per server (false: none); true by default. */
  versions?: boolean
  /** Servers per transaction (one insert statement per table); 1 000 by default. */
  batchSize?: number
  /** The reference time; timestamps spread over the two years before it. */
  now?: Date
  /** Called after each batch with the servers handled so far. */
  onProgress?: (done: number, total: number) => void
}

export interface SeedCatalogueResult {
  /** Servers inserted. */
  servers: number
  /** Servers skipped because their slug was taken meanwhile. */
  skipped: number
  categoriesCreated: number
  categoriesUsed: number
  tags: number
  versions: number
  ms: number
}

/** Categories, in display order (sort_order 10, 20, …). */
export const SEED_CATEGORIES: ReadonlyArray<{ name: string; icon: string; description: string }> = [
  { name: 'Databases', icon: 'database', description: 'Query, inspect and administer relational, document and key-value databases.' },
  { name: 'Developer Tools', icon: 'code', description: 'Repositories, issues, builds and packages for software teams.' },
  { name: 'Cloud', icon: 'cloud', description: 'Cloud providers, containers and infrastructure as code.' },
  { name: 'Communication', icon: 'message-circle', description: 'Chat, email, SMS and meetings.' },
  { name: 'Search', icon: 'search', description: 'Web search engines and search indexes.' },
  { name: 'Files', icon: 'folder', description: 'Local files, cloud drives and documents.' },
  { name: 'Browsers & Automation', icon: 'globe', description: 'Browser control, scraping and workflow automation.' },
  { name: 'Monitoring', icon: 'activity', description: 'Metrics, logs, traces, errors and incidents.' },
  { name: 'Security', icon: 'shield', description: 'Secrets, identity, vulnerability scanning and threat intelligence.' },
  { name: 'Finance', icon: 'credit-card', description: 'Payments, accounting and market data.' },
  { name: 'Productivity', icon: 'check-square', description: 'Notes, calendars, tasks and spreadsheets.' },
  { name: 'AI & ML', icon: 'cpu', description: 'Models, embeddings, vector stores and experiment tracking.' },
  { name: 'Data Analytics', icon: 'bar-chart', description: 'Warehouses, pipelines, dashboards and product analytics.' },
  { name: 'Project Management', icon: 'kanban', description: 'Boards, sprints and roadmaps.' },
  { name: 'Version Control', icon: 'git-branch', description: 'Git hosting and local repositories.' },
  { name: 'Maps & Location', icon: 'map', description: 'Maps, geocoding, routing and places.' },
  { name: 'Weather', icon: 'cloud-sun', description: 'Forecasts, observations and alerts.' },
  { name: 'CRM & Support', icon: 'users', description: 'Customers, deals and support tickets.' },
  { name: 'E-commerce', icon: 'shopping-cart', description: 'Stores, products, orders and inventory.' },
  { name: 'Social Media', icon: 'share-2', description: 'Posts, feeds and communities.' },
  { name: 'Media', icon: 'film', description: 'Music, video, images and podcasts.' },
  { name: 'Design', icon: 'pen-tool', description: 'Design files, assets and diagrams.' },
  { name: 'Knowledge & Memory', icon: 'book-open', description: 'Knowledge bases, wikis and long-term memory for agents.' },
  { name: 'Utilities', icon: 'tool', description: 'Time, fetching, conversion and other small helpers.' },
  { name: 'Documentation', icon: 'file-text', description: 'Product and API documentation.' },
  { name: 'Marketing', icon: 'trending-up', description: 'Campaigns, newsletters and SEO.' },
  { name: 'Education', icon: 'graduation-cap', description: 'Courses, papers and learning material.' },
  { name: 'Health', icon: 'heart', description: 'Fitness, nutrition and health records.' },
  { name: 'Gaming', icon: 'gamepad', description: 'Game servers, stores and stats.' },
  { name: 'IoT & Smart Home', icon: 'home', description: 'Devices, sensors and home automation.' },
  { name: 'Travel', icon: 'plane', description: 'Flights, hotels and itineraries.' },
  { name: 'Legal', icon: 'scale', description: 'Contracts, filings and compliance.' },
]

interface Product {
  name: string
  category: string
  tags: string[]
  env: string
  /** Relative frequency in the catalogue (1–3). */
  weight: number
}

// name | category | tags (space separated; `_` stands for a space inside a tag) | environment variable | weight
const PRODUCT_TABLE = `
PostgreSQL|Databases|database sql postgres|POSTGRES_URL|3
MySQL|Databases|database sql mysql|MYSQL_URL|3
SQLite|Databases|database sql sqlite local|SQLITE_PATH|3
Redis|Databases|database cache redis key-value|REDIS_URL|3
MongoDB|Databases|database nosql mongodb|MONGODB_URI|3
MariaDB|Databases|database sql mariadb|MARIADB_URL|1
Cassandra|Databases|database nosql cassandra|CASSANDRA_HOSTS|1
ClickHouse|Databases|database sql clickhouse analytics|CLICKHOUSE_URL|2
DuckDB|Databases|database sql duckdb analytics local|DUCKDB_PATH|2
Neo4j|Databases|database graph neo4j cypher|NEO4J_URI|2
DynamoDB|Databases|database nosql aws dynamodb|AWS_REGION|2
Supabase|Databases|database postgres supabase backend|SUPABASE_KEY|2
Firestore|Databases|database nosql firebase google|FIREBASE_PROJECT|1
CockroachDB|Databases|database sql distributed|COCKROACH_URL|1
Oracle Database|Databases|database sql oracle enterprise|ORACLE_DSN|1
SQL Server|Databases|database sql mssql microsoft|MSSQL_CONNECTION|1
GitHub|Developer Tools|github git code-review ci|GITHUB_TOKEN|3
GitLab|Developer Tools|gitlab git ci devops|GITLAB_TOKEN|3
Bitbucket|Version Control|bitbucket git atlassian|BITBUCKET_TOKEN|1
Git|Version Control|git local version-control|GIT_REPO_PATH|2
Jira|Project Management|jira atlassian issues agile|JIRA_API_TOKEN|3
Linear|Project Management|linear issues agile|LINEAR_API_KEY|3
Asana|Project Management|asana tasks|ASANA_TOKEN|1
Trello|Project Management|trello boards tasks|TRELLO_KEY|2
ClickUp|Project Management|clickup tasks|CLICKUP_TOKEN|1
Sentry|Monitoring|sentry errors observability|SENTRY_AUTH_TOKEN|3
npm|Developer Tools|npm packages javascript|NPM_TOKEN|1
PyPI|Developer Tools|pypi packages python|PYPI_TOKEN|1
Postman|Developer Tools|postman api testing|POSTMAN_API_KEY|1
OpenAPI|Developer Tools|openapi api rest|OPENAPI_SPEC_URL|2
Jenkins|Developer Tools|jenkins ci build|JENKINS_TOKEN|1
CircleCI|Developer Tools|circleci ci build|CIRCLECI_TOKEN|1
GitHub Actions|Developer Tools|github ci workflows|GITHUB_TOKEN|2
SonarQube|Developer Tools|sonarqube code-quality|SONAR_TOKEN|1
Kubernetes|Cloud|kubernetes k8s containers devops|KUBECONFIG|3
Docker|Cloud|docker containers devops|DOCKER_HOST|3
Helm|Cloud|helm kubernetes charts|KUBECONFIG|1
Terraform|Cloud|terraform iac devops|TF_TOKEN|2
Ansible|Cloud|ansible automation iac|ANSIBLE_CONFIG|1
AWS S3|Cloud|aws s3 storage|AWS_ACCESS_KEY_ID|3
AWS Lambda|Cloud|aws serverless lambda|AWS_ACCESS_KEY_ID|2
AWS EC2|Cloud|aws ec2 compute|AWS_ACCESS_KEY_ID|1
Google Cloud Storage|Cloud|gcp storage google|GOOGLE_APPLICATION_CREDENTIALS|1
Azure Blob Storage|Cloud|azure storage microsoft|AZURE_STORAGE_CONNECTION_STRING|1
Azure DevOps|Developer Tools|azure devops microsoft ci|AZURE_DEVOPS_PAT|1
Cloudflare|Cloud|cloudflare cdn dns edge|CLOUDFLARE_API_TOKEN|2
Vercel|Cloud|vercel deployments serverless|VERCEL_TOKEN|2
Netlify|Cloud|netlify deployments|NETLIFY_AUTH_TOKEN|1
Fly.io|Cloud|fly deployments|FLY_API_TOKEN|1
DigitalOcean|Cloud|digitalocean droplets|DIGITALOCEAN_TOKEN|1
Slack|Communication|slack chat messaging|SLACK_BOT_TOKEN|3
Discord|Communication|discord chat community bots|DISCORD_TOKEN|3
Microsoft Teams|Communication|teams chat microsoft|TEAMS_APP_ID|2
Telegram|Communication|telegram chat bots|TELEGRAM_BOT_TOKEN|2
WhatsApp|Communication|whatsapp messaging|WHATSAPP_TOKEN|1
Twilio|Communication|twilio sms voice|TWILIO_AUTH_TOKEN|2
Gmail|Communication|gmail email google|GMAIL_CREDENTIALS|3
Outlook|Communication|outlook email microsoft|MS_GRAPH_TOKEN|2
Zoom|Communication|zoom meetings video|ZOOM_JWT|1
Matrix|Communication|matrix chat federated|MATRIX_ACCESS_TOKEN|1
SendGrid|Marketing|sendgrid email|SENDGRID_API_KEY|1
Mailchimp|Marketing|mailchimp newsletters email|MAILCHIMP_API_KEY|1
Brave Search|Search|search web brave|BRAVE_API_KEY|3
Google Search|Search|search web google|SERPAPI_KEY|2
Bing Search|Search|search web microsoft|BING_API_KEY|1
DuckDuckGo|Search|search web privacy|DDG_REGION|2
Tavily|Search|search web research|TAVILY_API_KEY|2
Exa|Search|search web semantic|EXA_API_KEY|1
Perplexity|Search|search ai research|PERPLEXITY_API_KEY|2
Elasticsearch|Search|search elasticsearch full-text|ELASTICSEARCH_URL|2
Meilisearch|Search|search full-text|MEILI_MASTER_KEY|1
Algolia|Search|search algolia|ALGOLIA_API_KEY|1
Wikipedia|Knowledge & Memory|wikipedia knowledge reference|WIKI_LANG|2
arXiv|Education|arxiv papers research|ARXIV_MAX_RESULTS|1
Filesystem|Files|files local filesystem|ALLOWED_DIRECTORIES|3
Google Drive|Files|drive files google|GOOGLE_DRIVE_CREDENTIALS|2
Dropbox|Files|dropbox files storage|DROPBOX_TOKEN|1
OneDrive|Files|onedrive files microsoft|MS_GRAPH_TOKEN|1
SFTP|Files|sftp files ssh|SFTP_HOST|1
PDF|Files|pdf documents|PDF_ROOT|2
Excel|Files|excel spreadsheets microsoft|EXCEL_PATH|1
Markdown|Files|markdown documents|DOCS_ROOT|1
Playwright|Browsers & Automation|browser playwright automation testing|PLAYWRIGHT_BROWSERS_PATH|3
Puppeteer|Browsers & Automation|browser puppeteer automation chrome|PUPPETEER_EXECUTABLE_PATH|3
Selenium|Browsers & Automation|browser selenium automation testing|SELENIUM_URL|1
Browserbase|Browsers & Automation|browser cloud automation|BROWSERBASE_API_KEY|1
Firecrawl|Browsers & Automation|scraping crawler web|FIRECRAWL_API_KEY|2
Zapier|Browsers & Automation|zapier automation workflows|ZAPIER_API_KEY|2
n8n|Browsers & Automation|n8n automation workflows|N8N_API_KEY|2
Grafana|Monitoring|grafana dashboards observability|GRAFANA_TOKEN|3
Prometheus|Monitoring|prometheus metrics observability|PROMETHEUS_URL|2
Datadog|Monitoring|datadog metrics logs observability|DD_API_KEY|2
New Relic|Monitoring|newrelic apm observability|NEW_RELIC_API_KEY|1
PagerDuty|Monitoring|pagerduty incidents on-call|PAGERDUTY_TOKEN|2
Opsgenie|Monitoring|opsgenie incidents on-call|OPSGENIE_API_KEY|1
Loki|Monitoring|loki logs grafana|LOKI_URL|1
Uptime Kuma|Monitoring|uptime status self-hosted|UPTIME_KUMA_URL|1
HashiCorp Vault|Security|vault secrets hashicorp|VAULT_TOKEN|2
1Password|Security|1password secrets passwords|OP_SERVICE_ACCOUNT_TOKEN|2
Snyk|Security|snyk vulnerabilities dependencies|SNYK_TOKEN|1
Trivy|Security|trivy vulnerabilities containers|TRIVY_CACHE_DIR|1
VirusTotal|Security|virustotal malware threat-intel|VT_API_KEY|1
Shodan|Security|shodan threat-intel recon|SHODAN_API_KEY|1
Okta|Security|okta identity sso|OKTA_API_TOKEN|1
Auth0|Security|auth0 identity oauth|AUTH0_CLIENT_SECRET|1
Keycloak|Security|keycloak identity self-hosted|KEYCLOAK_URL|1
Stripe|Finance|stripe payments billing|STRIPE_SECRET_KEY|3
PayPal|Finance|paypal payments|PAYPAL_CLIENT_SECRET|1
Plaid|Finance|plaid banking|PLAID_SECRET|1
QuickBooks|Finance|quickbooks accounting invoices|QUICKBOOKS_TOKEN|1
Xero|Finance|xero accounting invoices|XERO_CLIENT_SECRET|1
Coinbase|Finance|coinbase crypto trading|COINBASE_API_KEY|1
Alpha Vantage|Finance|stocks market-data|ALPHA_VANTAGE_KEY|1
Yahoo Finance|Finance|stocks market-data|YF_REGION|2
Notion|Productivity|notion notes wiki|NOTION_TOKEN|3
Google Calendar|Productivity|calendar google scheduling|GOOGLE_CALENDAR_CREDENTIALS|2
Calendar|Productivity|calendar scheduling caldav|CALDAV_URL|2
Todoist|Productivity|todoist tasks|TODOIST_API_TOKEN|1
Obsidian|Knowledge & Memory|obsidian notes markdown|OBSIDIAN_VAULT|2
Evernote|Productivity|evernote notes|EVERNOTE_TOKEN|1
Airtable|Productivity|airtable spreadsheets database|AIRTABLE_API_KEY|2
Google Sheets|Productivity|sheets spreadsheets google|GOOGLE_SHEETS_CREDENTIALS|2
Confluence|Documentation|confluence wiki atlassian|CONFLUENCE_TOKEN|2
OpenAI|AI & ML|openai llm|OPENAI_API_KEY|2
Hugging Face|AI & ML|huggingface models datasets|HF_TOKEN|2
Replicate|AI & ML|replicate models inference|REPLICATE_API_TOKEN|1
Ollama|AI & ML|ollama llm local|OLLAMA_HOST|2
LangChain|AI & ML|langchain llm agents|LANGCHAIN_API_KEY|1
Pinecone|AI & ML|pinecone vectors embeddings|PINECONE_API_KEY|2
Qdrant|AI & ML|qdrant vectors embeddings|QDRANT_URL|2
Weaviate|AI & ML|weaviate vectors embeddings|WEAVIATE_URL|1
Chroma|AI & ML|chroma vectors embeddings local|CHROMA_PATH|1
Stable Diffusion|AI & ML|images generation|SD_API_URL|1
Whisper|AI & ML|speech transcription audio|WHISPER_MODEL|1
MLflow|AI & ML|mlflow experiments mlops|MLFLOW_TRACKING_URI|1
Weights & Biases|AI & ML|wandb experiments mlops|WANDB_API_KEY|1
Snowflake|Data Analytics|snowflake warehouse sql|SNOWFLAKE_ACCOUNT|2
BigQuery|Data Analytics|bigquery warehouse sql google|GOOGLE_APPLICATION_CREDENTIALS|2
Databricks|Data Analytics|databricks spark lakehouse|DATABRICKS_TOKEN|1
dbt|Data Analytics|dbt transformations sql|DBT_PROFILES_DIR|1
Metabase|Data Analytics|metabase dashboards bi|METABASE_URL|1
Tableau|Data Analytics|tableau dashboards bi|TABLEAU_TOKEN|1
PostHog|Data Analytics|posthog product-analytics|POSTHOG_API_KEY|1
Mixpanel|Data Analytics|mixpanel product-analytics|MIXPANEL_SECRET|1
Google Analytics|Data Analytics|analytics google web|GA_PROPERTY_ID|2
Kafka|Data Analytics|kafka streaming events|KAFKA_BROKERS|2
Apache Spark|Data Analytics|spark big-data|SPARK_MASTER|1
Google Maps|Maps & Location|maps google geocoding places|GOOGLE_MAPS_API_KEY|2
OpenStreetMap|Maps & Location|maps osm geocoding|OSM_USER_AGENT|2
Mapbox|Maps & Location|maps mapbox routing|MAPBOX_TOKEN|1
Weather|Weather|weather forecast|WEATHER_API_KEY|3
OpenWeather|Weather|weather forecast openweather|OPENWEATHER_API_KEY|2
NOAA Weather|Weather|weather forecast alerts|NOAA_USER_AGENT|1
Salesforce|CRM & Support|salesforce crm sales|SALESFORCE_TOKEN|2
HubSpot|CRM & Support|hubspot crm marketing|HUBSPOT_ACCESS_TOKEN|2
Zendesk|CRM & Support|zendesk support tickets|ZENDESK_API_TOKEN|2
Intercom|CRM & Support|intercom support chat|INTERCOM_TOKEN|1
Freshdesk|CRM & Support|freshdesk support tickets|FRESHDESK_API_KEY|1
Shopify|E-commerce|shopify store orders|SHOPIFY_ACCESS_TOKEN|2
WooCommerce|E-commerce|woocommerce wordpress store|WOOCOMMERCE_KEY|1
Amazon Seller|E-commerce|amazon marketplace orders|SP_API_REFRESH_TOKEN|1
Reddit|Social Media|reddit community social|REDDIT_CLIENT_SECRET|2
Mastodon|Social Media|mastodon fediverse social|MASTODON_TOKEN|1
Bluesky|Social Media|bluesky atproto social|BLUESKY_APP_PASSWORD|1
LinkedIn|Social Media|linkedin social professional|LINKEDIN_TOKEN|1
X|Social Media|twitter social|X_BEARER_TOKEN|1
YouTube|Media|youtube video transcripts|YOUTUBE_API_KEY|2
Spotify|Media|spotify music playlists|SPOTIFY_CLIENT_SECRET|2
FFmpeg|Media|ffmpeg video audio conversion|FFMPEG_PATH|1
Unsplash|Media|images photos|UNSPLASH_ACCESS_KEY|1
Figma|Design|figma design ui|FIGMA_TOKEN|2
Canva|Design|canva design templates|CANVA_TOKEN|1
Mermaid|Design|diagrams mermaid|MERMAID_THEME|1
Excalidraw|Design|diagrams whiteboard|EXCALIDRAW_URL|1
Memory|Knowledge & Memory|memory knowledge-graph agents|MEMORY_FILE|2
Knowledge Graph|Knowledge & Memory|knowledge-graph graph memory|GRAPH_STORE|1
Time|Utilities|time timezones|TZ|2
Fetch|Utilities|fetch http web|FETCH_USER_AGENT|2
Calculator|Utilities|math calculator|CALC_PRECISION|1
Shell|Utilities|shell terminal commands|ALLOWED_COMMANDS|2
Home Assistant|IoT & Smart Home|home-assistant smart-home iot|HASS_TOKEN|2
MQTT|IoT & Smart Home|mqtt iot sensors|MQTT_BROKER_URL|1
Philips Hue|IoT & Smart Home|hue lights smart-home|HUE_BRIDGE_IP|1
Strava|Health|strava fitness running|STRAVA_TOKEN|1
Fitbit|Health|fitbit fitness sleep|FITBIT_TOKEN|1
Steam|Gaming|steam games stats|STEAM_API_KEY|1
Minecraft|Gaming|minecraft game-server|MINECRAFT_RCON_PASSWORD|1
Amadeus|Travel|flights hotels travel|AMADEUS_CLIENT_SECRET|1
Airbnb|Travel|travel listings|AIRBNB_LOCALE|1
Google Scholar|Education|papers research citations|SCHOLAR_PROXY|1
Canvas LMS|Education|lms courses education|CANVAS_API_TOKEN|1
DocuSign|Legal|docusign contracts signatures|DOCUSIGN_TOKEN|1
SEC EDGAR|Legal|filings sec compliance|EDGAR_USER_AGENT|1
`

const PRODUCTS: Product[] = PRODUCT_TABLE.trim().split('\n').map((line) => {
  const [name, category, tags, env, weight] = line.split('|') as [string, string, string, string, string]
  return { name, category, tags: tags.split(' ').map((tag) => tag.replace(/_/g, ' ')), env, weight: Number(weight) }
})

const ROLES = ['Server', 'MCP Server', 'Connector', 'Bridge', 'Tools', 'Gateway', 'Explorer', 'Assistant', 'Toolkit', 'Agent', 'Adapter',
  'Integration', 'Proxy', 'Inspector', 'Manager', 'Hub', 'Kit', 'Navigator', 'Companion', 'Console', 'Helper', 'Studio', 'Relay', 'Pilot']
const QUALIFIERS = ['Read-only', 'Admin', 'Lite', 'Pro', 'Cloud', 'Local', 'Self-hosted', 'Enterprise', 'Community', 'Secure',
  'Fast', 'Async', 'Unofficial', 'Streaming', 'Multi-tenant', 'Simple', 'Advanced', 'Next', 'Smart', 'Open', 'Minimal', 'Universal',
  'Remote', 'Headless', 'Typed', 'Serverless', 'Team', 'Personal', 'Mini']
const ORG_HEADS = ['acme', 'nimbus', 'blue', 'quantum', 'open', 'bright', 'north', 'pixel', 'stack', 'data', 'cloud', 'hyper', 'iron',
  'silver', 'red', 'deep', 'swift', 'lumen', 'nova', 'vertex', 'atlas', 'orbit', 'echo', 'zen', 'polar', 'cobalt', 'amber', 'cedar',
  'delta', 'ember', 'granite', 'harbor', 'indigo', 'juniper', 'kite', 'lattice', 'maple', 'nebula', 'onyx', 'prism']
const ORG_TAILS = ['labs', 'works', 'hq', 'io', 'soft', 'systems', 'dev', 'tech', 'ai', 'ware', 'forge', 'hub']
const FIRST_NAMES = ['Alex', 'Sam', 'Maria', 'Yuki', 'Priya', 'Jonas', 'Lena', 'Omar', 'Chen', 'Fatima', 'Lucas', 'Ines', 'Noah', 'Aisha',
  'Mateo', 'Sofia', 'Ivan', 'Hana', 'Diego', 'Amara', 'Felix', 'Nora', 'Ravi', 'Elif', 'Kofi', 'Mia', 'Tariq', 'Zoe', 'Pavel', 'Leila']
const LAST_NAMES = ['Smith', 'Garcia', 'Tanaka', 'Patel', 'Schmidt', 'Novak', 'Haddad', 'Wang', 'Okafor', 'Silva', 'Rossi', 'Kim',
  'Nguyen', 'Kowalski', 'Jensen', 'Dubois', 'Moreau', 'Costa', 'Ahmed', 'Berg', 'Ivanova', 'Lopez', 'Muller', 'Sato', 'Khan', 'Young']

const ACTIONS = ['query', 'inspect', 'manage', 'monitor', 'browse', 'sync', 'export', 'import', 'automate', 'deploy', 'analyze',
  'summarize', 'create', 'update', 'list', 'archive', 'triage', 'schedule', 'translate', 'transform', 'validate', 'index', 'stream',
  'back up', 'restore', 'audit', 'visualize', 'compare', 'migrate', 'review', 'label', 'annotate', 'fetch', 'upload', 'download',
  'publish', 'rotate', 'scan', 'trace', 'profile', 'benchmark', 'forecast', 'reconcile', 'classify', 'replicate', 'provision', 'scale',
  'debug', 'diagnose', 'filter', 'merge', 'tag', 'approve', 'assign', 'clean up', 'deduplicate', 'enrich', 'explain', 'generate',
  'harvest', 'lint', 'mirror', 'moderate', 'organize', 'preview', 'recommend', 'snapshot', 'watch', 'rank', 'catalog', 'curate',
  'decode', 'encrypt', 'evaluate', 'extract', 'format', 'group', 'inventory', 'normalize', 'paginate', 'parse', 'pin', 'prioritize',
  'purge', 'query across', 'redact', 'render', 'resolve', 'route', 'sample', 'share', 'sort', 'split', 'summarise', 'test', 'throttle',
  'track', 'unarchive', 'verify', 'version', 'warm up']

const OBJECTS: Record<string, string[]> = {
  'Databases': ['tables', 'schemas', 'indexes', 'queries', 'rows', 'migrations', 'collections', 'keys', 'replicas', 'backups', 'views', 'stored procedures'],
  'Developer Tools': ['repositories', 'pull requests', 'issues', 'commits', 'branches', 'pipelines', 'releases', 'builds', 'packages', 'code reviews', 'test runs', 'artifacts'],
  'Version Control': ['repositories', 'commits', 'branches', 'tags', 'diffs', 'merge requests', 'blame output', 'stashes'],
  'Cloud': ['buckets', 'clusters', 'pods', 'deployments', 'containers', 'functions', 'instances', 'volumes', 'DNS records', 'images', 'namespaces', 'stacks'],
  'Communication': ['channels', 'messages', 'threads', 'conversations', 'contacts', 'mailboxes', 'attachments', 'meetings', 'notifications', 'reactions'],
  'Search': ['web results', 'news', 'snippets', 'citations', 'search indexes', 'documents', 'answers', 'sources'],
  'Files': ['files', 'folders', 'documents', 'attachments', 'spreadsheets', 'archives', 'shared links', 'file metadata'],
  'Browsers & Automation': ['web pages', 'screenshots', 'forms', 'workflows', 'sessions', 'cookies', 'crawls', 'selectors', 'scenarios'],
  'Monitoring': ['dashboards', 'alerts', 'metrics', 'logs', 'traces', 'incidents', 'errors', 'uptime checks', 'on-call schedules', 'SLOs'],
  'Security': ['secrets', 'vulnerabilities', 'certificates', 'identities', 'policies', 'audit logs', 'findings', 'credentials', 'access grants'],
  'Finance': ['payments', 'invoices', 'customers', 'subscriptions', 'transactions', 'ledgers', 'quotes', 'refunds', 'payouts', 'portfolios'],
  'Productivity': ['notes', 'pages', 'events', 'tasks', 'calendars', 'reminders', 'spreadsheets', 'databases', 'checklists', 'agendas'],
  'AI & ML': ['models', 'embeddings', 'prompts', 'datasets', 'experiments', 'vectors', 'completions', 'fine-tunes', 'inference jobs'],
  'Data Analytics': ['warehouses', 'reports', 'dashboards', 'queries', 'events', 'funnels', 'cohorts', 'pipelines', 'topics', 'metrics'],
  'Project Management': ['issues', 'sprints', 'projects', 'boards', 'epics', 'tickets', 'roadmaps', 'milestones', 'backlogs'],
  'Maps & Location': ['places', 'routes', 'addresses', 'coordinates', 'directions', 'map tiles', 'travel times', 'points of interest'],
  'Weather': ['forecasts', 'observations', 'alerts', 'radar images', 'air quality readings', 'historical data'],
  'CRM & Support': ['contacts', 'deals', 'tickets', 'accounts', 'leads', 'conversations', 'macros', 'pipelines'],
  'E-commerce': ['products', 'orders', 'inventory', 'customers', 'discounts', 'carts', 'shipments', 'listings'],
  'Social Media': ['posts', 'feeds', 'comments', 'followers', 'communities', 'mentions', 'profiles', 'threads'],
  'Media': ['videos', 'playlists', 'transcripts', 'tracks', 'images', 'podcasts', 'captions', 'albums'],
  'Design': ['design files', 'components', 'frames', 'diagrams', 'assets', 'comments', 'styles', 'prototypes'],
  'Knowledge & Memory': ['entities', 'relations', 'notes', 'articles', 'facts', 'memories', 'backlinks', 'observations'],
  'Utilities': ['time zones', 'URLs', 'expressions', 'commands', 'conversions', 'timestamps', 'web content'],
  'Documentation': ['pages', 'spaces', 'articles', 'API references', 'guides', 'changelogs'],
  'Marketing': ['campaigns', 'audiences', 'newsletters', 'templates', 'subscribers', 'reports'],
  'Education': ['papers', 'courses', 'assignments', 'citations', 'abstracts', 'syllabi'],
  'Health': ['activities', 'workouts', 'sleep records', 'heart rate data', 'goals'],
  'Gaming': ['players', 'achievements', 'servers', 'leaderboards', 'game stats', 'worlds'],
  'IoT & Smart Home': ['devices', 'sensors', 'lights', 'automations', 'scenes', 'thermostats'],
  'Travel': ['flights', 'hotels', 'itineraries', 'bookings', 'fares', 'listings'],
  'Legal': ['contracts', 'filings', 'signatures', 'envelopes', 'clauses', 'disclosures'],
}

const FEATURES = ['caching', 'pagination', 'rate limiting', 'OAuth', 'API keys', 'automatic retries', 'streaming responses', 'batching',
  'webhooks', 'audit logging', 'dry runs', 'role-based access', 'multi-account support', 'connection pooling', 'TLS', 'HTTP proxies',
  'single sign-on', 'fine-grained permissions', 'schema discovery', 'natural language queries', 'structured output', 'JSON Schema validation',
  'incremental sync', 'full-text search', 'vector search', 'change feeds', 'OpenTelemetry tracing', 'health checks', 'prompt templates',
  'resource subscriptions', 'progress notifications', 'cancellation', 'offline mode', 'encryption at rest', 'PII redaction', 'time zone handling',
  'CSV export', 'Markdown output', 'diff previews', 'bulk operations', 'idempotent writes', 'configurable timeouts', 'backpressure', 'dark mode',
  'localization', 'sandboxing', 'allow lists', 'read replicas', 'query plans', 'cost estimates']
const AGENTS = ['AI assistants', 'LLM agents', 'Claude', 'coding agents', 'chat assistants', 'copilots', 'autonomous agents', 'IDE assistants', 'MCP clients']
const AUDIENCES = ['data teams', 'SRE teams', 'support engineers', 'developers', 'analysts', 'security teams', 'small businesses', 'researchers',
  'students', 'product managers', 'platform engineers', 'marketers', 'finance teams', 'designers', 'homelab enthusiasts', 'ops teams']
const ACCESS = ['read-only', 'full', 'scoped', 'audited', 'sandboxed', 'safe', 'fine-grained']
/** Tags any server may carry, besides its product's: many, so that each stays rare. */
const GENERAL_TAGS = ['ai', 'read-only', 'cli', 'self-hosted', 'official', 'community', 'experimental', 'enterprise', 'open source',
  'productivity', 'integration', 'api', 'realtime', 'reporting', 'llm', 'agents', 'no-code', 'local-first', 'beta', 'stable',
  'lightweight', 'privacy', 'admin', 'readonly', 'write-access', 'multi-tenant', 'streaming', 'batch', 'webhooks', 'rest', 'graphql',
  'grpc', 'websocket', 'json', 'yaml', 'csv', 'markdown-output', 'docker-ready', 'kubernetes-ready', 'serverless', 'edge', 'desktop',
  'ide', 'vscode', 'cursor', 'claude-desktop', 'chatgpt', 'copilot', 'rag', 'embeddings-ready', 'caching', 'rate-limited', 'oauth2',
  'api-key', 'sso', 'audit', 'compliance', 'gdpr', 'hipaa', 'soc2', 'testing', 'debugging', 'observability', 'notifications',
  'scheduling', 'backup', 'migration', 'etl', 'low-latency', 'high-availability', 'offline', 'mobile', 'i18n', 'accessibility',
  'education', 'hobby', 'research', 'startup', 'fintech', 'healthcare', 'gaming', 'iot', 'home-lab', 'homelab']
const LICENSES = ['MIT', 'MIT', 'MIT', 'Apache-2.0', 'Apache-2.0', 'BSD-3-Clause', 'GPL-3.0', 'MPL-2.0', 'ISC', 'AGPL-3.0']
const FRAMEWORKS: Record<string, string[]> = {
  TypeScript: ['the official TypeScript SDK', 'FastMCP for TypeScript', 'Node.js streams', 'zod schemas'],
  Python: ['the official Python SDK', 'FastMCP', 'asyncio', 'Pydantic models'],
  Go: ['mcp-go', 'the Go SDK', 'goroutines'],
  Rust: ['rmcp', 'Tokio', 'the Rust SDK'],
  Java: ['Spring AI', 'the Java SDK', 'Quarkus'],
  'C#': ['the C# SDK', '.NET 8', 'ASP.NET Core'],
}

/** Language with its runtimes; the weight of the language in the catalogue. */
const LANGUAGES: Array<{ language: string; runtimes: string[]; weight: number }> = [
  { language: 'TypeScript', runtimes: ['node', 'node', 'node', 'node', 'bun', 'deno'], weight: 45 },
  { language: 'Python', runtimes: ['python', 'python', 'python', 'uv', 'docker'], weight: 33 },
  { language: 'Go', runtimes: ['binary', 'binary', 'docker'], weight: 10 },
  { language: 'Rust', runtimes: ['binary', 'binary', 'docker', 'wasm'], weight: 5 },
  { language: 'Java', runtimes: ['jvm', 'docker'], weight: 4 },
  { language: 'C#', runtimes: ['dotnet', 'docker'], weight: 3 },
]

const DEFAULT_BATCH = 1000
const TWO_YEARS_MS = 2 * 365 * 24 * 3600 * 1000
/** Slugs the service refuses: paths of the catalogue's routes, and UUID-shaped ones (they could shadow an id). */
const RESERVED_SLUGS = new Set(['search', 'global', 'import'])
const ID_SHAPED = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const SLUG_LENGTH = 100

/** sfc32 seeded through splitmix32: small, fast, and good enough for test data. */
export class SeededRandom {
  private a: number
  private b: number
  private c: number
  private d: number

  constructor(seed: number) {
    let s = seed >>> 0
    const next = () => {
      s = (s + 0x9e3779b9) >>> 0
      let z = s
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b)
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35)
      return (z ^ (z >>> 16)) >>> 0
    }
    this.a = next()
    this.b = next()
    this.c = next()
    this.d = next()
    for (let i = 0; i < 12; i++) this.next()
  }

  /** In [0, 1). */
  next(): number {
    const t = (((this.a + this.b) >>> 0) + this.d) >>> 0
    this.d = (this.d + 1) >>> 0
    this.a = this.b ^ (this.b >>> 9)
    this.b = (this.c + (this.c << 3)) >>> 0
    this.c = ((this.c << 21) | (this.c >>> 11)) >>> 0
    this.c = (this.c + t) >>> 0
    return t / 4_294_967_296
  }

  /** In [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n)
  }

  between(min: number, max: number): number {
    return min + this.int(max - min + 1)
  }

  chance(p: number): boolean {
    return this.next() < p
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!
  }

  /** `n` distinct items (fewer when there are not that many). */
  sample<T>(items: readonly T[], n: number): T[] {
    const pool = [...items]
    const out: T[] = []
    while (out.length < n && pool.length > 0) out.push(pool.splice(this.int(pool.length), 1)[0]!)
    return out
  }

  weighted<T>(items: readonly T[], weight: (item: T) => number, total: number): T {
    let r = this.next() * total
    for (const item of items) {
      r -= weight(item)
      if (r < 0) return item
    }
    return items[items.length - 1]!
  }
}

type Tables = Database['t']
type ServerInsert = Tables['mcpServers']['$inferInsert']
type VersionInsert = Tables['mcpServerVersions']['$inferInsert']

interface Planned {
  server: ServerInsert & { id: string; slug: string; tags: string[] }
  versions: VersionInsert[]
}

const PRODUCT_WEIGHT = PRODUCTS.reduce((sum, p) => sum + p.weight, 0)
const LANGUAGE_WEIGHT = LANGUAGES.reduce((sum, l) => sum + l.weight, 0)
const capitalize = (text: string) => text.charAt(0).toUpperCase() + text.slice(1)
const compact = (text: string) => slugify(text, 60, 'mcp')

interface Organization { name: string; slug: string }

function organization(random: SeededRandom): Organization {
  const head = random.pick(ORG_HEADS)
  const tail = random.pick(ORG_TAILS)
  return { name: `${capitalize(head)} ${tail === 'io' || tail === 'hq' || tail === 'ai' ? tail.toUpperCase() : capitalize(tail)}`, slug: `${head}-${tail}` }
}

/** A person's handle on a code host, as an owner of personal projects. */
function person(random: SeededRandom): { name: string; handle: string } {
  const first = random.pick(FIRST_NAMES)
  const last = random.pick(LAST_NAMES)
  const handle = random.pick([`${first}${last}`, `${first.charAt(0)}${last}`, `${first}-${last}`, `${last}${random.between(1, 99)}`]).toLowerCase()
  return { name: `${first} ${last}`, handle }
}

/** Generates servers one after the other; names are kept unique within the run as far as reasonable. */
class ServerFactory {
  private readonly names = new Set<string>()
  /** The next number to try after a name taken in all its variants. */
  private readonly nextNumber = new Map<string, number>()
  private readonly slugs: Set<string>
  private readonly nextSuffix = new Map<string, number>()

  constructor(
    private readonly random: SeededRandom,
    private readonly categoryIds: Map<string, string>,
    private readonly seededCategoryIds: string[],
    takenSlugs: Iterable<string>,
    private readonly withVersions: boolean,
    private readonly now: number,
    private readonly total: number,
  ) {
    this.slugs = new Set(takenSlugs)
  }

  /** UUIDv7 of the given time; the random part from a pool of crypto bytes (fresh ids on every run). */
  private id(msecs: number): string {
    if (this.entropyAt + 16 > this.entropy.length) {
      this.entropy = randomBytes(16 * 4096)
      this.entropyAt = 0
    }
    const random = this.entropy.subarray(this.entropyAt, (this.entropyAt += 16))
    return uuidv7({ msecs, random })
  }

  private entropy = Buffer.alloc(0)
  private entropyAt = 0

  /**
   * The `index`-th server of the run. Creation times grow with the index over the past two years,
   * more of them recently (a catalogue that grows), so ids (UUIDv7 of the creation time) ascend
   * within a run, as they would had the servers been created one after the other.
   */
  make(index: number): Planned {
    const r = this.random
    const product = r.weighted(PRODUCTS, (p) => p.weight, PRODUCT_WEIGHT)
    const org = organization(r)
    const owner = r.chance(0.3) ? person(r) : null
    const ownerHandle = owner?.handle ?? org.slug
    const role = r.pick(ROLES)
    const name = this.name(product, role, org)
    const slug = this.slug(name)

    const { language, runtimes } = r.weighted(LANGUAGES, (l) => l.weight, LANGUAGE_WEIGHT)
    const runtime = r.pick(runtimes)
    const hasRemote = r.chance(0.15)
    const transportType = hasRemote ? (r.chance(0.75) ? 'http' as const : 'sse' as const) : r.weighted(['stdio', 'http', 'sse'] as const, (t) => (t === 'stdio' ? 80 : t === 'http' ? 15 : 5), 100)
    const repoName = compact(`${product.name}-mcp${r.chance(0.3) ? `-${role}` : ''}`)
    const tags = this.tags(product, language)
    const description = this.description(product, language)
    const createdAt = this.now - TWO_YEARS_MS + Math.floor(Math.sqrt((index + r.next()) / Math.max(this.total, 1)) * TWO_YEARS_MS)
    const updatedAt = createdAt + Math.floor(r.next() ** 3 * (this.now - createdAt))
    const id = this.id(createdAt)
    const packageVersion = `${r.between(0, 3)}.${r.between(0, 20)}.${r.between(0, 12)}`
    const packages = this.packages(product, language, runtime, org, repoName, packageVersion)
    const remotes: ServerRemote[] = hasRemote
      ? [{ type: transportType === 'sse' ? 'sse' : 'streamable-http', url: `https://${org.slug}.example.com/mcp/${slug}${transportType === 'sse' ? '/sse' : ''}` }]
      : []

    const status = r.weighted(['active', 'deprecated', 'maintenance', 'disabled'] as const, (s) => (s === 'active' ? 90 : s === 'deprecated' ? 5 : s === 'maintenance' ? 3 : 2), 100)
    const categoryName = product.category
    const categoryId = r.chance(0.04) || this.seededCategoryIds.length === 0
      ? null
      : this.categoryIds.get(categoryName.toLowerCase()) ?? r.pick(this.seededCategoryIds)

    const serverLanguage = r.chance(0.95) ? language : null
    const serverRuntime = r.chance(0.92) ? runtime : null
    const server: Planned['server'] = {
      id,
      name,
      sortName: name.toLowerCase(),
      slug,
      description,
      longDescription: r.chance(0.25) ? this.longDescription(name, description, product, language) : null,
      categoryId,
      tags,
      language: serverLanguage,
      runtime: serverRuntime,
      languageKey: serverLanguage === null ? null : caseKey(serverLanguage),
      runtimeKey: serverRuntime === null ? null : caseKey(serverRuntime),
      transportType,
      status,
      featured: r.chance(0.03),
      visibility: 'global',
      ownerTeamId: null,
      repositoryUrl: r.chance(0.92) ? `https://github.com/${ownerHandle}/${repoName}` : null,
      websiteUrl: r.chance(0.3) ? `https://${org.slug}.example.com/${repoName}` : null,
      iconUrl: r.chance(0.2) ? `https://${org.slug}.example.com/assets/${compact(product.name)}.png` : null,
      authorName: owner?.name ?? (r.chance(0.6) ? person(r).name : null),
      organization: owner === null || r.chance(0.3) ? org.name : null,
      license: r.chance(0.9) ? r.pick(LICENSES) : null,
      packages,
      remotes,
      latestVersion: null,
      createdBy: null,
      createdAt: new Date(createdAt),
      updatedAt: new Date(updatedAt),
    }
    const versions = this.withVersions ? this.versions(server, createdAt, updatedAt, packages, packageVersion) : []
    return { server, versions }
  }

  private name(product: Product, role: string, org: Organization): string {
    const r = this.random
    const other = r.pick(PRODUCTS)
    const candidates = [
      () => `${product.name} MCP Server`,
      () => `${product.name} ${role}`,
      () => `${r.pick(QUALIFIERS)} ${product.name} ${role}`,
      () => `${org.name} ${product.name} ${role}`,
      () => `${product.name} ${r.pick(QUALIFIERS)} ${role}`,
      () => `mcp-server-${compact(product.name)}`,
      () => `${compact(product.name)}-mcp${r.chance(0.5) ? `-${compact(role)}` : ''}`,
      () => (other === product ? `${product.name} ${role}` : `${product.name} + ${other.name} ${role}`),
    ]
    const weights = [4, 22, 24, 12, 14, 4, 8, 12]
    const chosen = candidates[r.weighted([0, 1, 2, 3, 4, 5, 6, 7], (i) => weights[i]!, 100)]!()
    for (const name of [chosen, `${chosen} (${org.name})`, `${r.pick(QUALIFIERS)} ${chosen} (${org.name})`]) {
      if (this.claimName(name)) return name
    }
    for (let n = this.nextNumber.get(chosen) ?? 2; ; n++) {
      const name = `${chosen} ${n}`
      if (this.claimName(name)) {
        this.nextNumber.set(chosen, n + 1)
        return name
      }
    }
  }

  private claimName(name: string): boolean {
    const key = name.toLowerCase()
    if (this.names.has(key)) return false
    this.names.add(key)
    return true
  }

  /** Like the service: the name slugified, then `-2`, `-3`, … until free; reserved paths skipped. */
  private slug(name: string): string {
    const base = slugify(name, SLUG_LENGTH - 6, 'server')
    for (let n = this.nextSuffix.get(base) ?? 1; ; n++) {
      const slug = n === 1 ? base : `${base}-${n}`
      if (RESERVED_SLUGS.has(slug) || ID_SHAPED.test(slug) || this.slugs.has(slug)) continue
      this.slugs.add(slug)
      this.nextSuffix.set(base, n + 1)
      return slug
    }
  }

  /** 1–6 tags: some of the product's (its own name more often than the shared ones), a few general ones. */
  private tags(product: Product, language: string): string[] {
    const r = this.random
    const count = r.weighted([1, 2, 3, 4, 5, 6], (n) => [12, 24, 28, 20, 10, 6][n - 1]!, 100)
    const own = r.sample(product.tags, Math.min(product.tags.length, r.between(1, Math.min(count, 3))))
    const extra = r.sample(GENERAL_TAGS, count - own.length)
    if (r.chance(0.05)) extra.push(language === 'C#' ? 'dotnet' : language.toLowerCase())
    return [...new Set([...own, ...extra])].slice(0, 6)
  }

  private description(product: Product, language: string): string {
    const r = this.random
    const objects = OBJECTS[product.category] ?? ['data']
    const obj = () => r.pick(objects)
    const action = () => r.pick(ACTIONS)
    const feature = () => r.pick(FEATURES)
    const intro = r.pick([
      () => `${capitalize(action())} ${obj()} in ${product.name} from any MCP client.`,
      () => `An MCP server that lets ${r.pick(AGENTS)} ${action()} ${product.name} ${obj()}.`,
      () => `Connects ${r.pick(AGENTS)} to ${product.name}: ${action()} ${obj()} and ${action()} ${obj()}.`,
      () => `Gives ${r.pick(AGENTS)} ${r.pick(ACCESS)} access to ${product.name} ${obj()}.`,
      () => `${capitalize(action())} and ${action()} ${product.name} ${obj()} through the Model Context Protocol.`,
      () => `Lightweight ${product.name} integration to ${action()} ${obj()}, with ${feature()}.`,
    ])()
    const sentences = [intro]
    if (r.chance(0.7)) {
      sentences.push(r.pick([
        () => `Supports ${feature()} and ${feature()}.`,
        () => `Built with ${r.pick(FRAMEWORKS[language] ?? ['the MCP SDK'])}, with ${feature()}.`,
        () => `Includes ${feature()} out of the box.`,
        () => `Designed for ${r.pick(AUDIENCES)} who ${action()} ${obj()} every day.`,
        () => `Tools to ${action()}, ${action()} and ${action()} ${obj()}.`,
      ])())
    }
    if (r.chance(0.35)) {
      const other = r.pick(PRODUCTS)
      sentences.push(r.pick([
        () => `Works well alongside ${other.name}.`,
        () => `Configured through environment variables; ${r.chance(0.5) ? 'runs locally or in a container' : 'no extra services needed'}.`,
        () => `Popular with ${r.pick(AUDIENCES)}.`,
        () => `Can also ${action()} ${other.name} ${r.pick(OBJECTS[other.category] ?? ['data'])}.`,
      ])())
    }
    return sentences.join(' ')
  }

  private longDescription(name: string, description: string, product: Product, language: string): string {
    const r = this.random
    const objects = OBJECTS[product.category] ?? ['data']
    const tools = r.sample(ACTIONS, r.between(2, 5)).map((action) => {
      const object = r.pick(objects)
      return `- \`${compact(action).replace(/-/g, '_')}_${compact(object).replace(/-/g, '_')}\`: ${capitalize(action)} ${object}.`
    })
    return [
      `# ${name}`,
      description,
      '## Tools',
      tools.join('\n'),
      '## Configuration',
      `Set \`${product.env}\` before starting the server. Written in ${language}.`,
    ].join('\n\n')
  }

  private packages(product: Product, language: string, runtime: string, org: Organization, repoName: string, version: string): ServerPackage[] {
    const r = this.random
    if (r.chance(0.08)) return []
    const base = compact(product.name)
    const withVersion = r.chance(0.6) ? { version } : {}
    const env = r.chance(0.55) ? { environment_variables: this.environment(product) } : {}
    const args = r.chance(0.15) ? { runtime_args: r.pick([['--read-only'], ['--port', '8080'], ['--log-level', 'debug'], ['--transport', 'stdio']]) } : {}
    const image = () => `${r.pick(['ghcr.io/', 'docker.io/', ''])}${org.slug}/${repoName}${r.chance(0.5) ? `:${version}` : ''}`
    let main: ServerPackage
    if (language === 'TypeScript' && runtime !== 'docker') {
      const identifier = r.pick([`@${org.slug}/${base}-mcp`, `${base}-mcp-server`, `mcp-${base}`, `@${org.slug}/mcp-${base}`, repoName])
      main = { registry_type: 'npm', identifier, ...withVersion, ...args, ...env }
    } else if (language === 'Python' && runtime !== 'docker') {
      const identifier = r.pick([`mcp-server-${base}`, `${base}-mcp`, `${org.slug}-${base}-mcp`, `${base.replace(/-/g, '_')}_mcp`])
      main = { registry_type: 'pypi', identifier, ...withVersion, ...args, ...env }
    } else {
      main = { registry_type: r.chance(0.7) ? 'docker' : 'oci', identifier: image(), ...args, ...env }
    }
    const packages = [main]
    if (main.registry_type !== 'docker' && main.registry_type !== 'oci' && r.chance(0.2)) {
      packages.push({ registry_type: 'docker', identifier: image(), ...env })
    }
    return normalizePackages(packages)
  }

  private environment(product: Product): NonNullable<ServerPackage['environment_variables']> {
    const r = this.random
    const secret = /TOKEN|KEY|SECRET|PASSWORD|CREDENTIALS|URL|URI|DSN|CONNECTION/.test(product.env)
    const variables: NonNullable<ServerPackage['environment_variables']> = [
      { name: product.env, description: `${product.name} ${secret ? 'credentials or connection string' : 'setting'}`, required: true, secret },
    ]
    if (r.chance(0.3)) variables.push({ name: 'LOG_LEVEL', description: 'debug, info, warn or error', required: false, secret: false, default: 'info' })
    if (r.chance(0.15)) variables.push({ name: 'MCP_READ_ONLY', description: 'Refuse write operations', required: false, secret: false, default: 'true' })
    return variables
  }

  /** 0–3 ascending versions between the server's creation and its last update; the latest marked. */
  private versions(server: Planned['server'], createdAt: number, updatedAt: number, packages: ServerPackage[], current: string): VersionInsert[] {
    const r = this.random
    const count = r.weighted([0, 1, 2, 3], (n) => [35, 30, 20, 15][n]!, 100)
    if (count === 0) return []
    let [major, minor, patch] = current.split('.').map(Number) as [number, number, number]
    const texts: string[] = []
    for (let i = 0; i < count; i++) {
      if (i > 0) {
        const bump = r.next()
        if (bump < 0.6) patch++
        else if (bump < 0.9) (minor++, (patch = 0))
        else (major++, (minor = 0), (patch = 0))
      }
      const core = `${major}.${minor}.${patch}`
      // A pre-release sometimes comes before its release, and sometimes is the newest version.
      if (r.chance(0.15)) texts.push(`${core}-${r.pick(['alpha', 'beta', 'rc'])}.${r.between(1, 4)}`)
      if (i < count - 1 || r.chance(0.85)) texts.push(r.chance(0.03) ? `${core}+build.${r.between(1, 999)}` : core)
    }
    const span = updatedAt - createdAt
    const rows: VersionInsert[] = texts.slice(-3).map((version, i, all) => {
      const parsed = parseVersion(version)!
      const at = new Date(createdAt + Math.floor((span * (i + r.next())) / all.length))
      const status = r.weighted(['active', 'deprecated', 'yanked'] as const, (s) => (s === 'active' ? 85 : s === 'deprecated' ? 10 : 5), 100)
      return {
        id: this.id(at.getTime()),
        serverId: server.id,
        version,
        precedence: parsed.key,
        prerelease: parsed.prerelease,
        status,
        changelog: r.chance(0.6) ? `${r.pick(['Adds', 'Improves', 'Fixes'])} ${r.pick(FEATURES)}.` : null,
        releaseDate: r.chance(0.9) ? at : null,
        packages: r.chance(0.3) && packages.length > 0 ? packages.map((p) => ({ ...p, version })) : null,
        remotes: null,
        isLatest: false,
        createdAt: at,
        updatedAt: at,
      }
    })
    // The latest: the highest active release, else the highest active pre-release (binary key order).
    let latest: VersionInsert | undefined
    for (const row of rows) {
      if (row.status !== 'active') continue
      if (latest === undefined || (latest.prerelease && !row.prerelease) || (latest.prerelease === row.prerelease && row.precedence > latest.precedence)) latest = row
    }
    if (latest !== undefined) {
      latest.isLatest = true
      server.latestVersion = latest.version
    }
    return rows
  }
}

/**
 * Inserts rows through one statement whose only parameter is the rows as JSON, unpacked by the
 * database (SQLite: json_each; PostgreSQL: jsonb_to_recordset with each column's type): no
 * per-value parameters to bind, so a batch of any size stays far below both parameter limits
 * (32 766 on SQLite, 65 535 on PostgreSQL), and no per-value work in the query builder, which
 * costs more than the database's own work here (about 30 s per 100 000 servers with their tags and
 * versions, measured). The column list comes from the Drizzle table: the columns the rows set
 * (the others take their defaults), never a generated one or `seq`. Values are encoded as the
 * driver would: SQLite timestamps as epoch milliseconds and booleans as 0/1 (what `->>` gives for
 * JSON true/false), PostgreSQL timestamps as ISO text; JSON columns hold the value itself.
 * Answers the ids inserted when `returning`.
 */
async function insertJson(
  database: Database,
  tx: Db,
  table: Table,
  rows: Array<Record<string, unknown>>,
  { conflictOn, returning }: { conflictOn?: string; returning?: boolean } = {},
): Promise<string[]> {
  if (rows.length === 0) return []
  const sqlite = database.dialect === 'sqlite'
  const columns = Object.entries(getTableColumns(table)).filter(([key, column]) => key !== 'seq' && column.generated === undefined && key in rows[0]!)
  const json = JSON.stringify(rows.map((row) => {
    const out: Record<string, unknown> = {}
    for (const [key, column] of columns) {
      const value = row[key]
      out[column.name] = value instanceof Date ? (sqlite ? value.getTime() : value.toISOString()) : value ?? null
    }
    return out
  }))
  const quoted = (name: string) => `"${name}"`
  const names = columns.map(([, column]) => quoted(column.name)).join(', ')
  const tail = `${conflictOn === undefined ? '' : ` on conflict (${quoted(conflictOn)}) do nothing`}${returning === true ? ' returning "id"' : ''}`
  const target = quoted(getTableName(table))
  if (sqlite) {
    // `where true`: SQLite would read `on conflict` after a bare FROM as a join constraint.
    const values = columns.map(([, column]) => `value ->> '$.${column.name}'`).join(', ')
    const query = sql`${sql.raw(`insert into ${target} (${names}) select ${values} from json_each(`)}${json}${sql.raw(`) where true${tail}`)}`
    const remote = tx as unknown as { all(query: SQL): Promise<unknown[][]>; run(query: SQL): Promise<unknown> }
    if (returning !== true) {
      await remote.run(query)
      return []
    }
    return (await remote.all(query)).map((row) => row[0] as string)
  }
  const types = columns.map(([, column]) => `${quoted(column.name)} ${column.getSQLType()}`).join(', ')
  const query = sql`${sql.raw(`insert into ${target} (${names}) select ${names} from jsonb_to_recordset(`)}${json}${sql.raw(`::jsonb) as r(${types})${tail}`)}`
  const result = await tx.execute(query)
  return returning === true ? result.rows.map((row) => (row as { id: string }).id) : []
}

async function ensureCategories(database: Database, count: number, now: Date): Promise<{ created: number; ids: Map<string, string>; seeded: string[] }> {
  const { db, t } = database
  const wanted = SEED_CATEGORIES.slice(0, count)
  let created = 0
  if (wanted.length > 0) {
    const rows = await catalogueTransaction(database, (tx) => tx.insert(t.mcpCategories).values(wanted.map((category, i) => ({
      id: uuidv7(), name: category.name, nameKey: category.name.normalize('NFKC').toLowerCase(), description: category.description, icon: category.icon, sortOrder: (i + 1) * 10, createdAt: now, updatedAt: now,
    }))).onConflictDoNothing().returning({ id: t.mcpCategories.id }))
    created = rows.length
  }
  const all = await db.select({ id: t.mcpCategories.id, name: t.mcpCategories.name }).from(t.mcpCategories)
  const byName = new Map(all.map((row) => [row.name.normalize('NFKC').toLowerCase(), row.id]))
  const ids = new Map<string, string>()
  for (const category of wanted) ids.set(category.name.toLowerCase(), byName.get(category.name.normalize('NFKC').toLowerCase())!)
  return { created, ids, seeded: [...ids.values()] }
}

/** One transaction: the servers whose slug is still free, then their tags and versions. */
async function insertBatch(database: Database, batch: Planned[]): Promise<{ servers: number; tags: number; versions: number }> {
  const { t } = database
  return catalogueTransaction(database, async (tx: Db) => {
    const inserted = await insertJson(database, tx, t.mcpServers, batch.map((p) => p.server), { conflictOn: 'slug', returning: true })
    const kept = new Set(inserted)
    const mine = kept.size === batch.length ? batch : batch.filter((p) => kept.has(p.server.id))
    const tags = mine.flatMap((p) => p.server.tags.map((tag) => ({ serverId: p.server.id, tag })))
    const versions = mine.flatMap((p) => p.versions)
    await insertJson(database, tx, t.mcpServerTags, tags)
    await insertJson(database, tx, t.mcpServerVersions, versions)
    return { servers: mine.length, tags: tags.length, versions: versions.length }
  })
}

/** Adds `options.servers` global servers (with tags, categories and versions) to the catalogue. */
export async function seedCatalogue(database: Database, options: SeedCatalogueOptions): Promise<SeedCatalogueResult> {
  const began = performance.now()
  const total = Math.max(0, Math.floor(options.servers))
  const categoryCount = Math.min(Math.max(0, options.categories ?? 24), SEED_CATEGORIES.length)
  const now = options.now ?? new Date()
  const batchSize = Math.max(1, options.batchSize ?? DEFAULT_BATCH)

  const categories = await ensureCategories(database, categoryCount, now)
  const { db, t } = database
  const taken = (await db.select({ slug: t.mcpServers.slug }).from(t.mcpServers)).map((row) => row.slug)
  const factory = new ServerFactory(new SeededRandom(options.seed ?? 42), categories.ids, categories.seeded, taken, options.versions ?? true, now.getTime(), total)

  const result: SeedCatalogueResult = { servers: 0, skipped: 0, categoriesCreated: categories.created, categoriesUsed: categories.seeded.length, tags: 0, versions: 0, ms: 0 }
  // The next batch is generated while the database writes the previous one (PostgreSQL works in
  // a process of its own; on SQLite, which writes in this thread, this changes nothing).
  let pending: Promise<void> = Promise.resolve()
  for (let done = 0; done < total;) {
    const size = Math.min(batchSize, total - done)
    const first = done
    const batch = Array.from({ length: size }, (_, i) => factory.make(first + i))
    await pending
    done += size
    pending = insertBatch(database, batch).then((written) => {
      result.servers += written.servers
      result.skipped += size - written.servers
      result.tags += written.tags
      result.versions += written.versions
      options.onProgress?.(first + size, total)
    })
  }
  await pending
  // Fresh planner statistics after a bulk load (PostgreSQL's autovacuum would get there later).
  if (database.dialect === 'postgresql' && result.servers > 0) {
    await db.execute(sql`analyze mcp_servers, mcp_server_tags, mcp_server_versions, mcp_categories`)
  }
  result.ms = performance.now() - began
  return result
}

/** Every server in the catalogue, for reports. */
export async function catalogueSize(database: Database): Promise<number> {
  const { db, t } = database
  const [row] = await db.select({ n: sql<number>`count(*)`.mapWith(Number) }).from(t.mcpServers)
  return row?.n ?? 0
}
