/** The words the catalogue seed builds servers from: categories, products, roles, organizations, phrases. */

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

export interface Product {
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
Git|Version Control|git local version-control|REPOSITORY_PATH|2
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
Docker|Cloud|docker containers devops|CONTAINER_ENGINE_URL|3
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

export const PRODUCTS: Product[] = PRODUCT_TABLE.trim().split('\n').map((line) => {
  const [name, category, tags, env, weight] = line.split('|') as [string, string, string, string, string]
  return { name, category, tags: tags.split(' ').map((tag) => tag.replace(/_/g, ' ')), env, weight: Number(weight) }
})

export const ROLES = ['Server', 'MCP Server', 'Connector', 'Bridge', 'Tools', 'Gateway', 'Explorer', 'Assistant', 'Toolkit', 'Agent', 'Adapter',
  'Integration', 'Proxy', 'Inspector', 'Manager', 'Hub', 'Kit', 'Navigator', 'Companion', 'Console', 'Helper', 'Studio', 'Relay', 'Pilot']
export const QUALIFIERS = ['Read-only', 'Admin', 'Lite', 'Pro', 'Cloud', 'Local', 'Self-hosted', 'Enterprise', 'Community', 'Secure',
  'Fast', 'Async', 'Unofficial', 'Streaming', 'Multi-tenant', 'Simple', 'Advanced', 'Next', 'Smart', 'Open', 'Minimal', 'Universal',
  'Remote', 'Headless', 'Typed', 'Serverless', 'Team', 'Personal', 'Mini']
export const ORG_HEADS = ['acme', 'nimbus', 'blue', 'quantum', 'open', 'bright', 'north', 'pixel', 'stack', 'data', 'cloud', 'hyper', 'iron',
  'silver', 'red', 'deep', 'swift', 'lumen', 'nova', 'vertex', 'atlas', 'orbit', 'echo', 'zen', 'polar', 'cobalt', 'amber', 'cedar',
  'delta', 'ember', 'granite', 'harbor', 'indigo', 'juniper', 'kite', 'lattice', 'maple', 'nebula', 'onyx', 'prism']
export const ORG_TAILS = ['labs', 'works', 'hq', 'io', 'soft', 'systems', 'dev', 'tech', 'ai', 'ware', 'forge', 'hub']
export const FIRST_NAMES = ['Alex', 'Sam', 'Maria', 'Yuki', 'Priya', 'Jonas', 'Lena', 'Omar', 'Chen', 'Fatima', 'Lucas', 'Ines', 'Noah', 'Aisha',
  'Mateo', 'Sofia', 'Ivan', 'Hana', 'Diego', 'Amara', 'Felix', 'Nora', 'Ravi', 'Elif', 'Kofi', 'Mia', 'Tariq', 'Zoe', 'Pavel', 'Leila']
export const LAST_NAMES = ['Smith', 'Garcia', 'Tanaka', 'Patel', 'Schmidt', 'Novak', 'Haddad', 'Wang', 'Okafor', 'Silva', 'Rossi', 'Kim',
  'Nguyen', 'Kowalski', 'Jensen', 'Dubois', 'Moreau', 'Costa', 'Ahmed', 'Berg', 'Ivanova', 'Lopez', 'Muller', 'Sato', 'Khan', 'Young']

export const ACTIONS = ['query', 'inspect', 'manage', 'monitor', 'browse', 'sync', 'export', 'import', 'automate', 'deploy', 'analyze',
  'summarize', 'create', 'update', 'list', 'archive', 'triage', 'schedule', 'translate', 'transform', 'validate', 'index', 'stream',
  'back up', 'restore', 'audit', 'visualize', 'compare', 'migrate', 'review', 'label', 'annotate', 'fetch', 'upload', 'download',
  'publish', 'rotate', 'scan', 'trace', 'profile', 'benchmark', 'forecast', 'reconcile', 'classify', 'replicate', 'provision', 'scale',
  'debug', 'diagnose', 'filter', 'merge', 'tag', 'approve', 'assign', 'clean up', 'deduplicate', 'enrich', 'explain', 'generate',
  'harvest', 'lint', 'mirror', 'moderate', 'organize', 'preview', 'recommend', 'snapshot', 'watch', 'rank', 'catalog', 'curate',
  'decode', 'encrypt', 'evaluate', 'extract', 'format', 'group', 'inventory', 'normalize', 'paginate', 'parse', 'pin', 'prioritize',
  'purge', 'query across', 'redact', 'render', 'resolve', 'route', 'sample', 'share', 'sort', 'split', 'summarise', 'test', 'throttle',
  'track', 'unarchive', 'verify', 'version', 'warm up']

export const OBJECTS: Record<string, string[]> = {
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

export const FEATURES = ['caching', 'pagination', 'rate limiting', 'OAuth', 'API keys', 'automatic retries', 'streaming responses', 'batching',
  'webhooks', 'audit logging', 'dry runs', 'role-based access', 'multi-account support', 'connection pooling', 'TLS', 'HTTP proxies',
  'single sign-on', 'fine-grained permissions', 'schema discovery', 'natural language queries', 'structured output', 'JSON Schema validation',
  'incremental sync', 'full-text search', 'vector search', 'change feeds', 'OpenTelemetry tracing', 'health checks', 'prompt templates',
  'resource subscriptions', 'progress notifications', 'cancellation', 'offline mode', 'encryption at rest', 'PII redaction', 'time zone handling',
  'CSV export', 'Markdown output', 'diff previews', 'bulk operations', 'idempotent writes', 'configurable timeouts', 'backpressure', 'dark mode',
  'localization', 'sandboxing', 'allow lists', 'read replicas', 'query plans', 'cost estimates']
export const AGENTS = ['AI assistants', 'LLM agents', 'Claude', 'coding agents', 'chat assistants', 'copilots', 'autonomous agents', 'IDE assistants', 'MCP clients']
export const AUDIENCES = ['data teams', 'SRE teams', 'support engineers', 'developers', 'analysts', 'security teams', 'small businesses', 'researchers',
  'students', 'product managers', 'platform engineers', 'marketers', 'finance teams', 'designers', 'homelab enthusiasts', 'ops teams']
export const ACCESS = ['read-only', 'full', 'scoped', 'audited', 'sandboxed', 'safe', 'fine-grained']
/** Tags any server may carry, besides its product's: many, so that each stays rare. */
export const GENERAL_TAGS = ['ai', 'read-only', 'cli', 'self-hosted', 'official', 'community', 'experimental', 'enterprise', 'open source',
  'productivity', 'integration', 'api', 'realtime', 'reporting', 'llm', 'agents', 'no-code', 'local-first', 'beta', 'stable',
  'lightweight', 'privacy', 'admin', 'readonly', 'write-access', 'multi-tenant', 'streaming', 'batch', 'webhooks', 'rest', 'graphql',
  'grpc', 'websocket', 'json', 'yaml', 'csv', 'markdown-output', 'docker-ready', 'kubernetes-ready', 'serverless', 'edge', 'desktop',
  'ide', 'vscode', 'cursor', 'claude-desktop', 'chatgpt', 'copilot', 'rag', 'embeddings-ready', 'caching', 'rate-limited', 'oauth2',
  'api-key', 'sso', 'audit', 'compliance', 'gdpr', 'hipaa', 'soc2', 'testing', 'debugging', 'observability', 'notifications',
  'scheduling', 'backup', 'migration', 'etl', 'low-latency', 'high-availability', 'offline', 'mobile', 'i18n', 'accessibility',
  'education', 'hobby', 'research', 'startup', 'fintech', 'healthcare', 'gaming', 'iot', 'home-lab', 'homelab']
export const LICENSES = ['MIT', 'MIT', 'MIT', 'Apache-2.0', 'Apache-2.0', 'BSD-3-Clause', 'GPL-3.0', 'MPL-2.0', 'ISC', 'AGPL-3.0']
export const FRAMEWORKS: Record<string, string[]> = {
  TypeScript: ['the official TypeScript SDK', 'FastMCP for TypeScript', 'Node.js streams', 'zod schemas'],
  Python: ['the official Python SDK', 'FastMCP', 'asyncio', 'Pydantic models'],
  Go: ['mcp-go', 'the Go SDK', 'goroutines'],
  Rust: ['rmcp', 'Tokio', 'the Rust SDK'],
  Java: ['Spring AI', 'the Java SDK', 'Quarkus'],
  'C#': ['the C# SDK', '.NET 8', 'ASP.NET Core'],
}

/** Language with its runtimes; the weight of the language in the catalogue. */
export const LANGUAGES: Array<{ language: string; runtimes: string[]; weight: number }> = [
  { language: 'TypeScript', runtimes: ['node', 'node', 'node', 'node', 'bun', 'deno'], weight: 45 },
  { language: 'Python', runtimes: ['python', 'python', 'python', 'uv', 'docker'], weight: 33 },
  { language: 'Go', runtimes: ['binary', 'binary', 'docker'], weight: 10 },
  { language: 'Rust', runtimes: ['binary', 'binary', 'docker', 'wasm'], weight: 5 },
  { language: 'Java', runtimes: ['jvm', 'docker'], weight: 4 },
  { language: 'C#', runtimes: ['dotnet', 'docker'], weight: 3 },
]
