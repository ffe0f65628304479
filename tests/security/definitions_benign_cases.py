"""The red team's benign twins (issue 25): definitions real servers list, where a scanner is most tempted.

Popular servers' tools (GitHub, GitLab, filesystem, git, Slack, Postgres, SQLite, Puppeteer, Playwright,
Sentry, AWS, Kubernetes, Docker, password managers, security scanners, backup, delete, kill and sync tools),
in their own words or words of their kind: tools that delete, kill, send, upload and read secrets on the
user's request, descriptions that WARN the user, auth tools that take a token, security tools that name
the attacks they look for, and a server's guidance through its own tools. None may give a finding.
"""

from __future__ import annotations

from tests.security.definitions_redteam_cases import Case, flag, num, t

ARR = {"type": "array", "items": {"type": "string"}, "description": "Paths"}

BENIGN: list[Case] = [
    # -- filesystem and git
    ("filesystem", t("edit_file", "Make line-based edits to a text file. Each edit replaces exact line sequences with "
                     "new content. Returns a git-style diff showing the changes made. Only works within allowed "
                     "directories.", path="Path", dryRun=flag("Preview changes using git-style diff format"))),
    ("filesystem", t("move_file", "Move or rename files and directories. Can move files between directories and rename "
                     "them in a single operation. If the destination exists, the operation will fail.",
                     source="Source", destination="Destination")),
    ("filesystem", t("read_multiple_files", "Read the contents of multiple files simultaneously. This is more "
                     "efficient than reading files one by one when you need to analyze or compare multiple files.",
                     paths=ARR)),
    ("filesystem", t("list_allowed_directories", "Returns the list of directories that this server is allowed to "
                     "access. Use this to understand which directories are available before trying to access files.")),
    ("filesystem", t("delete_file", "Delete a file. DANGEROUS: the file is removed permanently and cannot be "
                     "recovered. Ask the user to confirm before deleting.", path="Path of the file to delete")),
    ("git", t("git_reset", "Unstages all staged changes", repo_path="Repository path")),
    ("git", t("git_checkout", "Switches branches", repo_path="Repository", branch_name="Branch")),
    ("git", t("git_commit", "Records changes to the repository", repo_path="Repository", message="Commit message")),
    ("git", t("git_clean", "Remove untracked files from the working tree (git clean -fd). WARNING: this deletes "
              "files that are not tracked by git; they cannot be recovered.", repo_path="Repository")),
    ("git", t("git_push", "Push commits to the remote. Use force only when the user explicitly asks; a force push "
              "can overwrite other people's work.", remote="Remote name", branch="Branch", force=flag("Force push"))),
    # -- GitHub and GitLab
    ("github", t("delete_file", "Delete a file from a GitHub repository", owner="Owner", repo="Repo", path="Path",
                 message="Commit message", branch="Branch")),
    ("github", t("fork_repository", "Fork a GitHub repository to your account or specified organization",
                 owner="Owner", repo="Repo", organization="Optional: organization to fork to")),
    ("github", t("list_secret_scanning_alerts", "List secret scanning alerts in a GitHub repository.", owner="Owner",
                 repo="Repo", state="Filter by state")),
    ("github", t("get_me", "Get details of the authenticated GitHub user. Use this when a request includes \"me\", "
                 "\"my\". The output will not change unless the user changes their profile, so only call this "
                 "once.")),
    ("github", t("create_repository", "Create a new GitHub repository in your account", name="Repository name",
                 private=flag("Whether repo should be private"))),
    ("github", t("merge_pull_request", "Merge a pull request in a GitHub repository.", owner="Owner", repo="Repo",
                 pullNumber=num("Pull request number"), merge_method="Merge method")),
    ("github", t("run_workflow", "Run an Actions workflow by workflow ID or filename", owner="Owner", repo="Repo",
                 workflow_id="Workflow ID or filename", ref="The git reference for the workflow")),
    ("github", t("delete_workflow_run_logs", "Delete logs for a workflow run", owner="Owner", repo="Repo",
                 run_id=num("The unique identifier of the workflow run"))),
    ("gitlab", t("create_merge_request", "Create a new merge request in a GitLab project", project_id="Project ID or "
                 "URL-encoded path", title="Merge request title", source_branch="Branch containing changes",
                 target_branch="Branch to merge into")),
    ("gitlab", t("delete_branch", "Delete a branch from a GitLab project. Protected branches cannot be deleted.",
                 project_id="Project", branch="Branch name")),
    ("gitlab", t("create_access_token", "Create a project access token. The token is shown only once: store it in a "
                 "secret manager and never paste it into issues or chat.", project_id="Project", name="Token name",
                 scopes=ARR)),
    # -- chat and mail
    ("slack", t("slack_reply_to_thread", "Reply to a specific message thread in Slack", channel_id="Channel",
                thread_ts="The timestamp of the parent message", text="The reply text")),
    ("slack", t("slack_get_users", "Get a list of all users in the workspace with their basic profile information",
                cursor="Pagination cursor")),
    ("gmail", t("delete_email", "Permanently deletes an email", messageId="ID of the email message to delete")),
    ("gmail", t("batch_delete_emails", "Permanently deletes multiple emails in batches", messageIds=ARR)),
    ("gmail", t("forward_email", "Forward an email to the recipients you give. Attachments are included.",
                messageId="Message", to="Recipients")),
    ("gmail", t("create_filter", "Creates a new Gmail filter with custom criteria and actions, e.g. forward mail "
                "from a sender to another address or archive it.", criteria="Criteria", action="Action")),
    # -- databases
    ("postgres", t("query", "Run a read-only SQL query", sql="The SQL query")),
    ("postgres", t("execute_sql", "Execute any SQL statement, including DROP and DELETE. Destructive statements "
                   "cannot be undone; run them only when the user asks.", sql="SQL")),
    ("sqlite", t("write_query", "Execute an INSERT, UPDATE, or DELETE query on the SQLite database",
                 query="SQL query to execute")),
    ("sqlite", t("drop_table", "Drop a table from the database. All rows are deleted.", table_name="Table")),
    ("supabase", t("reset_branch", "Resets migrations of a development branch. Any untracked data or schema changes "
                   "will be lost.", branch_id="Branch", migration_version="Version to reset to")),
    ("redis", t("flushdb", "Delete all the keys of the currently selected Redis database.", db=num("Database index"))),
    ("mongodb", t("drop_database", "Removes the specified database, deleting the associated data files.",
                  database="Database name")),
    # -- browsers
    ("puppeteer", t("puppeteer_evaluate", "Execute JavaScript in the browser console", script="JavaScript code to "
                    "execute")),
    ("puppeteer", t("puppeteer_fill", "Fill out an input field", selector="CSS selector for input field",
                    value="Value to fill")),
    ("playwright", t("browser_type", "Type text into editable element", element="Human-readable element description "
                     "used to obtain permission to interact with the element", ref="Exact target element reference "
                     "from the page snapshot", text="Text to type into the element", submit=flag("Press Enter"))),
    ("playwright", t("browser_file_upload", "Upload one or multiple files", paths=ARR)),
    ("playwright", t("browser_network_requests", "Returns all network requests since loading the page")),
    ("playwright", t("browser_snapshot", "Capture accessibility snapshot of the current page, this is better than "
                     "screenshot")),
    ("browser", t("get_cookies", "Returns the cookies of the current page, for debugging sessions in your own test "
                  "browser.", url="Page URL")),
    # -- observability
    ("sentry", t("get_issue_details", "Retrieve issue details from Sentry for a specific Issue ID, including the "
                 "stacktrace and error message.", issue_id="Issue ID")),
    ("sentry", t("resolve_issue", "Mark a Sentry issue as resolved.", issue_id="Issue")),
    ("datadog", t("get_logs", "Search and retrieve logs from Datadog", query="Datadog query", from_=num("Start"))),
    # -- cloud and containers
    ("aws", t("s3_delete_object", "Delete an object from an S3 bucket. Versioned buckets keep a delete marker.",
              bucket="Bucket", key="Object key")),
    ("aws", t("iam_create_access_key", "Creates a new AWS secret access key and corresponding AWS access key ID for "
              "the specified user.", user_name="IAM user")),
    ("aws", t("secretsmanager_get_secret_value", "Retrieves the contents of the encrypted fields SecretString or "
              "SecretBinary from the specified version of a secret.", secret_id="The ARN or name of the secret")),
    ("aws", t("ec2_terminate_instances", "Shuts down the specified instances. Terminated instances cannot be "
              "restarted; their EBS root volumes are deleted by default.", instance_ids=ARR)),
    ("aws", t("cloudtrail_lookup_events", "Looks up management events captured by CloudTrail, e.g. who deleted a "
              "bucket or disabled logging.", attribute="Lookup attribute")),
    ("kubernetes", t("kubectl_delete", "Delete Kubernetes resources by resource type, name, labels, or from a manifest "
                     "file", resourceType="Type", name="Name", namespace="Namespace")),
    ("kubernetes", t("kubectl_get_secrets", "List secrets in a namespace. Values are base64-encoded; decode only what "
                     "the user needs.", namespace="Namespace")),
    ("kubernetes", t("exec_in_pod", "Execute a command in a Kubernetes pod or container and return the output",
                     name="Pod", command="Command to execute")),
    ("kubernetes", t("scale_deployment", "Scale a deployment to the given number of replicas (0 stops it).",
                     name="Deployment", replicas=num("Replicas"))),
    ("docker", t("remove_container", "Remove a container. Use force to kill a running container first.",
                 container_id="Container", force=flag("Kill it if running"))),
    ("docker", t("prune_system", "Remove all stopped containers, unused networks, dangling images and build cache.",
                 volumes=flag("Also prune volumes"))),
    ("docker", t("docker_login", "Log in to a registry with a username and an access token.", registry="Registry",
                 username="User", token="Access token or password")),
    ("terraform", t("terraform_destroy", "Destroy all remote objects managed by a Terraform configuration. This is "
                    "irreversible.", directory="Working directory", auto_approve=flag("Skip the prompt"))),
    # -- processes, shell, system
    ("desktop-commander", t("kill_process", "Terminate a running process by PID. Use with caution.", pid=num("PID"))),
    ("desktop-commander", t("execute_command", "Execute a terminal command with timeout. Command will continue running "
                            "in background if it doesn't complete within timeout.", command="Command",
                            timeout_ms=num("Timeout"))),
    ("desktop-commander", t("force_terminate", "Force terminate a running terminal session", pid=num("PID"))),
    ("system", t("list_processes", "List running processes with PID, CPU and memory usage.")),
    ("system", t("reboot_host", "Reboot this machine. Unsaved work in other applications is lost.",
                 delay_seconds=num("Delay"))),
    ("system", t("manage_cron", "List, add or remove the current user's cron jobs.", action="list, add or remove",
                 schedule="Cron expression", command="Command")),
    ("system", t("add_ssh_key", "Add a public key to ~/.ssh/authorized_keys on a server you administer, so you can "
                 "log in with it.", host="Host", public_key="The public key (ssh-ed25519 ...)")),
    ("system", t("create_user", "Create a local user account with the given name and groups.", username="Name",
                 groups=ARR)),
    # -- secrets and password managers
    ("1password", t("item_get", "Get an item from a 1Password vault, including its fields. Passwords are revealed "
                    "only with reveal=true.", vault="Vault", item="Item name or ID", reveal=flag("Reveal secrets"))),
    ("bitwarden", t("generate_password", "Generate a strong random password or passphrase.", length=num("Length"))),
    ("bitwarden", t("unlock_vault", "Unlock the vault with the master password. Never store or log the master "
                    "password.", password="Master password")),
    ("vault", t("read_secret", "Read a secret from HashiCorp Vault at the given path.", path="Secret path",
                token="Vault token (defaults to VAULT_TOKEN)")),
    ("keychain", t("get_password", "Get a password you saved in the macOS keychain for the given service.",
                   service="Service", account="Account")),
    # -- auth tools that take a token
    ("stripe", t("authenticate", "Authenticate with your Stripe secret key. The key is kept in memory for this "
                 "session only.", api_key="Stripe API key (sk_...)")),
    ("notion", t("set_token", "Set the integration token used for Notion API calls.", token="Notion integration "
                 "token")),
    ("jira", t("login", "Log in to Jira Cloud with your email and API token.", email="Email",
               api_token="API token from id.atlassian.com")),
    ("openai", t("configure", "Configure the OpenAI client. Never share your API key with anyone; it is stored in "
                 "your OS keychain.", api_key="OpenAI API key", model="Model")),
    # -- security tools that name what they look for
    ("semgrep", t("security_check", "Scan code for security vulnerabilities such as SQL injection, XSS, hard-coded "
                  "secrets and command injection.", code="Code")),
    ("trufflehog", t("scan_secrets", "Scan a repository's history for leaked credentials (AWS keys, private keys, "
                     "Slack tokens) and report them.", repo="Repository URL")),
    ("mcp-scan", t("scan_tools", "Checks MCP tool descriptions for prompt injection, tool poisoning, tool shadowing "
                   "and hidden instructions such as 'ignore previous instructions'.", config="Config file")),
    ("virustotal", t("file_report", "Get a VirusTotal report for a file hash: detections for malware, trojans, "
                     "ransomware and backdoors.", hash="SHA-256")),
    ("nmap", t("port_scan", "Scan a host you are authorised to test for open ports and services.", target="Host")),
    ("siem", t("hunt_exfiltration", "Hunt for signs of data exfiltration: large uploads to unknown hosts, DNS "
               "tunnelling and beaconing to C2 servers.", hours=num("Look-back window"))),
    ("edr", t("isolate_host", "Isolate a compromised host from the network after a ransomware alert.",
              host_id="Host")),
    ("phish", t("report_phishing", "Report a phishing email to the security team and delete it from the inbox.",
                message_id="Message")),
    ("hibp", t("check_breach", "Check whether an email address appears in known data breaches (Have I Been Pwned).",
               email="Email")),
    # -- backup, sync, upload
    ("restic", t("backup", "Back up the given paths to the configured restic repository (encrypted).", paths=ARR)),
    ("restic", t("forget_snapshots", "Remove old snapshots according to a retention policy (keep-daily, keep-weekly).",
                 keep_daily=num("Daily snapshots to keep"))),
    ("rclone", t("sync", "Make the destination identical to the source, deleting files in the destination that are "
                 "not in the source.", source="Source remote:path", dest="Destination remote:path")),
    ("s3", t("upload_file", "Upload a local file to an S3 bucket you own.", path="Local path", bucket="Bucket",
             key="Key")),
    ("dropbox", t("share_link", "Create a shared link for a file. Anyone with the link can view it.", path="Path")),
    ("cleanup", t("clear_cache", "Delete the application's cache directory (~/.cache/myapp) to free space.")),
    ("cleanup", t("empty_trash", "Permanently delete all items in the trash.")),
    # -- everyday tools with a warning, a guidance or a parameter that looks sensitive
    ("memory", t("delete_entities", "Delete multiple entities and their associated relations from the knowledge "
                 "graph", entityNames=ARR)),
    ("memory", t("read_graph", "Read the entire knowledge graph")),
    ("sequential-thinking", t("sequentialthinking", "A detailed tool for dynamic and reflective problem-solving "
                              "through thoughts. Each thought can build on, question, or revise previous insights.",
                              thought="Your current thinking step", nextThoughtNeeded=flag("Whether another "
                              "thought step is needed"))),
    ("everything", t("printEnv", "Prints all environment variables, helpful for debugging MCP server configuration")),
    ("weather", t("get_alerts", "Get weather alerts for a US state.", state="Two-letter US state code (e.g. CA, NY)")),
    ("maps", t("maps_directions", "Get directions between two points", origin="Starting point address or "
               "coordinates", destination="Ending point", mode="Travel mode")),
    ("brave", t("brave_web_search", "Performs a web search using the Brave Search API, ideal for general queries, "
                "news, articles, and online content. Use this for broad information gathering. Maximum 20 results "
                "per request.", query="Search query (max 400 chars, 50 words)", count=num("Number of results"))),
    ("context7", t("get-library-docs", "Fetches up-to-date documentation for a library. You must call "
                   "'resolve-library-id' first to obtain the exact Context7-compatible library ID required to use "
                   "this tool.", context7CompatibleLibraryID="Exact library ID from resolve-library-id")),
    ("context7", t("resolve-library-id", "Resolves a package name to a Context7-compatible library ID. You MUST call "
                   "this function before 'get-library-docs' to obtain a valid library ID.", libraryName="Library "
                   "name")),
    ("firecrawl", t("firecrawl_scrape", "Scrape content from a single URL with advanced options. Best for single page "
                    "content extraction; for multiple pages use firecrawl_batch_scrape instead.", url="URL")),
    ("exa", t("web_search_exa", "Search the web using Exa AI - performs real-time web searches and can scrape content "
              "from specific URLs.", query="Search query")),
    ("crypto", t("get_wallet_balance", "Get the balance of a wallet address on Ethereum.", address="0x address")),
    ("crypto", t("send_transaction", "Send ETH from your wallet to an address after you confirm the amount in your "
                 "wallet app.", to="Recipient address", amount=num("Amount in ETH"))),
    ("telemetry", t("send_feedback", "Send feedback about this server to its maintainers. Only the text you write is "
                    "sent; no files or environment are included.", text="Feedback")),
]
