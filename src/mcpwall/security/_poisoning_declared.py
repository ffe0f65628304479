"""Declared harm phrased by what is watched, moved or lost, for `_poisoning_capability` (issue 25's red team).

The first rules name a harm by its verb and object ("exfiltrates", "steals passwords", "deletes all
backups"). A tool can declare the same harm without those words: it *watches* the user (every key
pressed, a screenshot every minute, the microphone kept open) and sends what it sees away; it copies
mail or data *secretly* to an address of its own; it moves a wallet's *entire balance* or grants an
unlimited approval; it shows a page that *looks like* the user's bank and keeps what is typed; it
returns *every* token or password a store holds; it gives a remote host a shell, gains root, or hooks
every shell that opens; it wipes the whole home directory, every drive, every repository's history.
Each rule is one such class, in English and, for the commonest (data sent off in secret), in the
languages the public suites also use. Context is `_poisoning_capability`'s: a clause that detects,
prevents or warns about the harm is not a statement of it.
"""

from __future__ import annotations

from mcpwall.security._poisoning_harms import Rule
from mcpwall.security._poisoning_harms import rule as _r
from mcpwall.security._poisoning_harms import within as _within

#: Sending verbs, in English.
_SEND = (r"(?:send|upload|post|transmit|forward|leak|beacon|relay|ship|stream|push|sync|mirror|report|deliver|cop(?:y|ie)"
         r"|e-?mail|pipe|transfer|export|exfil|b?cc)\w*")
#: Somewhere the user does not own: a remote, outside or third-party place, the author's own server, a URL or an address.
_AWAY = (r"(?:to|towards|into|onto|at|with)\s+(?:an?\s+|the\s+|our\s+|its\s+|their\s+)?(?:(?:remote|external|outside"
         r"|third[- ]party|offsite|unknown|foreign|other|separate|private|analytics|collection|own)\s+|[\w-]+\s+){0,2}"
         r"(?:servers?|hosts?|endpoints?|urls?|webhooks?|buckets?|address(?:es)?|accounts?|parties|party|recipients?"
         r"|machines?|locations?|services?|collectors?|sites?|bots?|channels?|numbers?|relays?)\b(?!\s+(?:you|the user) (?:own|control|configured?))"
         r"|(?:to|at)\s+\S{0,40}https?://|(?:to|at)\s+[\w.+-]{1,64}@[\w-]{1,63}\.|(?:to|at)\s+(?:[a-z0-9-]{1,63}\.){1,6}(?:com|net|org|io|xyz|ru|cn"
         r"|top|site|me|sh|co|dev|app|info|biz)\b|\boutside (?:the|your|its) (?:organi[sz]ation|company|network|tenant)"
         r"|\b(?:the\s+)?(?:tool'?s?|developer'?s?|author'?s?|vendor'?s?|maintainer'?s?|publisher'?s?|operator'?s?)\s+"
         r"(?:own\s+)?(?:servers?|endpoints?|hosts?|machines?|buckets?|accounts?|cloud|backend|collection points?|relays?)\b")
#: Done so the user does not know.
_COVERT = (r"(?:secretly|covertly|surreptitiously|stealthily|silently|quietly|discreetly|invisibly|hidden|secret"
           r"|without (?:the user'?s?|their|anyone'?s?|the owner'?s?) (?:knowledge|consent|knowing|noticing)"
           r"|behind the user'?s back|without (?:showing|displaying) any)")

EXTRA_RULES: tuple[Rule, ...] = (
    # -- data sent off in secret, or the user's private things sent to someone else's place
    _r("exfiltration", "high", rf"\b{_COVERT}\b" + _within(80) + rf"\b{_SEND}\b" + _within(80) + rf"(?:{_AWAY})"),
    _r("exfiltration", "high",
       rf"\b{_SEND}\b" + _within(50) + r"(?:(?:~/)?\.(?:bash|zsh)_history\b|\b(?:(?:the\s+)?(?:complete|entire|full|whole)\s+(?:conversation|chat|transcript"
       r"|inbox|mailbox)|(?:every|all|each)\s+(?:of\s+the\s+)?(?:private\s+)?repositor(?:y|ies)|private repositor(?:y|ies)"
       r"|shell history|environment variables|env vars|(?:the\s+)?user'?s'?\s+(?:files"
       r"|documents|notes|photos|emails|messages|credentials|passwords|data)|saved credentials|browsing history"
       r"|cookies|private keys?|seed phrases?|passwords|credentials|one-time codes|(?:otp|2fa|mfa|verification) codes"
       r"|auth\.log|contacts?|contact lists?)\b)" + _within(80) + rf"(?:{_AWAY})"),
    _r("exfiltration", "high",
       r"\b(?:gather|collect|read|dump|grab|captur|record|log|track|monitor|keep)\w*\b" + _within(40) + r"(?:(?:~/)?\."
       r"(?:bash|zsh)_history\b|\b(?:environment variables|env vars|shell history|browsing history|cookies|clipboard"
       r"|keystrokes|screenshots?|sms(?: messages)?|text messages|one-time codes|(?:otp|2fa) codes|(?:every|each|all)\s+"
       r"(?:\w+\s+)?(?:windows?|urls?|websites?|sites?|pages?|apps?|applications?|searches|messages|calls|notes?"
       r"|locations?|contacts?|emails?)|contact lists?|passwords|credentials)\b)"
       + _within(80) + rf"\b{_SEND}\b" + _within(40) + rf"(?:{_AWAY})"),
    _r("exfiltration", "high",
       r"\b(?:keeps?|stores?|sav\w*|holds?|retains?)\s+(?:a\s+)?(?:cop(?:y|ies)\s+of\s+)?(?:every|all|each|your|the user'?s)\s+"
       r"(?:\w+\s+){0,3}?(?:notes?|files?|messages?|contacts?|documents?|photos?|emails?|history|keystrokes|passwords?"
       r"|credentials?)\b" + _within(80) + r"\b(?:on|in|at|to)\s+(?:the\s+)?(?:vendor|developer|author|maintainer|publisher"
       r"|operator)'?s?\s+(?:own\s+)?(?:servers?|cloud|backend|infrastructure)\b"),
    _r("exfiltration", "high",
       r"\b(?:encod|split|chunk|hid|embed)\w*\b" + _within(60) + r"\b(?:as|into|in)\s+(?:dns\s+)?(?:subdomains?"
       r"|dns labels?|txt records?)\b|\b(?:leave|leaks?|exits?|escapes?|sneak|slip)\w*\s+(?:\w+\s+){0,3}?(?:through"
       r"|via|over|by)\s+(?:dns|icmp)\b"),
    # -- the same in other languages: private things sent to a remote, outside or attacker's server
    _r("exfiltration", "high",
       r"(?:contrôlé|contrôlée|controlado|controlada|controllato|kontrolliert\w*)\s+(?:par|por|da|dal|vom|von)\s+"
       r"(?:l'|el\s+|il\s+|o\s+|dem\s+)?(?:attaquant|atacante|attaccante|angreifer|pirate|hacker)"
       r"|(?:serveur|servidor|server|serveurs)\s+(?:distant|externe|remoto|externo|esterno|fremden|entfernten)"
       r"|(?:einen|einem)\s+(?:fremden|externen|entfernten)\s+server|攻击者(?:控制|的)|远程服务器|外部服务器"),
    # -- surveillance: what the user types, says or sees, recorded and sent
    _r("credential_harvesting", "high",
       r"\b(?:record|log|captur|track|monitor|stor)\w*\s+(?:every|each|all)\s+(?:the\s+)?keys?\s+(?:\w+\s+){0,2}?"
       r"(?:press|type|hit|strike)\w*"),
    _r("credential_harvesting", "high",
       r"\b(?:screenshots?|screen ?captures?|screen recordings?|audio|microphone|camera|webcam|recordings?)\b"
       + _within(80) + rf"\b{_SEND}\b" + _within(40) + rf"(?:{_AWAY})"),
    _r("credential_harvesting", "high",
       r"\b(?:keeps?|leaves?|holds?)\s+(?:the\s+)?(?:microphone|camera|webcam)\s+(?:open|on|running|active)\s+"
       r"(?:continuously|all the time|permanently|at all times|constantly)"),
    # -- credentials: a fake page that keeps what is typed; every secret a store holds, returned
    _r("credential_harvesting", "high",
       r"\b(?:fake|spoofed|counterfeit|imitation|look-?alike|cloned|forged)\s+(?:\w+\s+)?(?:login|log-in|sign-?in|password"
       r"|bank\w*|auth\w*)\s+(?:pages?|portals?|forms?|prompts?|dialogs?|screens?|sites?)\b"
       r"(?![^.\n]{0,60}\b(?:awareness|simulat\w*|training|drills?|exercises?|tests?|testing)\b)"
       r"|\b(?:looks?|appears?|styled|made to look|disguised|dressed up|mimic\w*|imitat\w*|impersonat\w*)\s+(?:just\s+"
       r"|exactly\s+)?(?:like|as)?\s*(?:the\s+|their\s+|a\s+|an\s+|your\s+|the user'?s\s+)?(?:\w+\s+){0,2}?(?:bank|login"
       r"|sign-?in|paypal|google|microsoft|apple|okta|password|keychain|credential)\b" + _within(60) + r"\b(?:stor|record"
       r"|sav|keep|captur|log|send|forward)\w*"
       r"|\b(?:keeps?|stores?|records?|saves?|logs?|captures?|sends?|forwards?)\s+(?:whatever|everything|anything|what)\s+"
       r"(?:the user|they|you|users)\s+(?:types?|enters?|typed|entered)\b"
       r"|\b(?:decrypt|extract|dump|export|read|steal|copy|copie|return|grab)\w*\s+(?:the\s+|all\s+)?(?:passwords?|credentials"
       r"|logins|cookies)\s+(?:saved|stored|kept|remembered)\s+(?:in|by)\s+(?:the\s+)?(?:browsers?|chrome|firefox|edge"
       r"|brave|safari|opera|keychain)\b"
       r"|\bntds\.dit\b|\b(?:sam|system|security) hive\b|\bfor (?:offline )?cracking\b"),
    _r("credential_harvesting", "high",
       r"\b(?:extract|return|export|dump|list|print|output|read|decrypt|reveal)\w*\s+(?:every|all|each)\s+(?:of\s+the\s+)?"
       r"(?:saved\s+|stored\s+)?(?:passwords?|credentials?|secrets?|tokens?|api keys?)\b" + _within(40) + r"\b(?:from|in"
       r"|stored in|of)\s+(?:the\s+)?(?:\w+\s+){0,2}?(?:keychains?|credential (?:manager|store)|vaults?|browsers?"
       r"|password managers?|namespaces?|machine|system|disk|home director(?:y|ies))\b"
       r"(?![^.\n]{0,60}\byou (?:select|choose|pick|give|name|own)\b)"
       r"|\b(?:returns?|outputs?|prints?|uploads?|sends?)\s+(?:every|all|each)\s+(?:\w+\s+)?(?:tokens?|keys?|passwords?"
       r"|secrets?|credentials?)\s+(?:it\s+)?(?:found|discovered|collected|located)\b"
       r"|\b(?:clear|plain)[- ]?text\s+(?:passwords?|credentials?)\b"
       r"|\b(?:cop|export|extract|read|dump|return|grab)\w*\s+(?:the\s+)?(?:user'?s'?\s+|their\s+|all\s+)(?:logged-in\s+)?"
       r"session (?:cookies|tokens)\b"
       r"|\b(?:scrap|harvest|steal|grab|collect|dump)\w*\s+(?:\w+\s+){0,2}?(?:cloud|aws|gcp|azure|iam|provider|access)"
       r"(?:\s+provider)?\s+(?:keys|credentials|tokens)\b|\binstance metadata\b" + _within(40) + r"\b(?:keys|credentials"
       r"|tokens)\b"),
    # -- crypto: the whole balance moved, unlimited approvals, addresses swapped for the author's
    _r("destruction", "high",
       r"\b(?:transfer|mov|send|sweep|withdraw)\w*\s+(?:all|the entire|the full|every|the whole)\s+(?:of\s+the\s+)?"
       r"(?:funds|balance|tokens|assets|crypto\w*|money|coins|eth|btc|sol)\b"
       r"|\b(?:unlimited|infinite|max(?:imum)?)\s+(?:token\s+)?(?:approvals?|allowances?)\b"
       r"|\b(?:replac|swap|substitut|chang|rewrit)\w*\s+(?:any|every|all|each|the)\s+(?:\w+\s+){0,2}?(?:crypto\w*"
       r"|bitcoin|btc|eth\w*|wallet)\s+address\w*\b" + _within(60) + r"\b(?:with|to|for)\s+(?:ours|our own|the attacker'?s?"
       r"|another|a different|the author'?s?)\b"),
    # -- destruction: the whole home directory, every drive, every repository's history, every bucket, every table
    _r("destruction", "high",
       r"\b(?:format|wip|eras)\w*\s+(?:every|all|each)\s+(?:\w+\s+)?(?:drives?|disks?|volumes?|partitions?)\b"
       r"|\bforce[- ]?push\w*\b" + _within(60) + r"\b(?:every|all|each)\s+(?:of\s+the\s+)?(?:\w+\s+)?repositor"
       r"|\b(?:eras|wip|destroy)\w*\s+(?:their|its|all|the)\s+(?:\w+\s+)?history\b"
       r"|\b(?:drop|truncat)\w*\s+(?:every|all)\s+(?:of\s+the\s+)?(?:tables?|databases?|collections?|schemas?)\b"
       r"(?!\s+(?:in|of|from)\s+(?:the\s+|a\s+|your\s+)?(?:test|local|dev\w*|staging|sandbox|scratch|temporary)\b)"
       r"|\b(?:remov|delet|eras|wip)\w*\s+(?:everything|all files|all data)\s+(?:under|in|on|from)\s+(?:/|~|c:\\\\?)"
       r"(?=\s|$|[,.;])"
       r"|\bencrypt\w*\b(?:[^.\n]|\.(?=\S)){0,120}?\b(?:how to|must|has to|have to|asking (?:them |the user )?to)\s+pay\b"
       r"|\b(?:how to|must|has to|have to)\s+pay\b(?:[^.\n]|\.(?=\S)){0,120}?\b(?:decrypt\w*|encrypt\w*|unlock)\b"
       r"|\b(?:delet|remov|destroy|purg)\w*\s+(?:every|all)\s+(?:of\s+the\s+)?(?:\w+\s+)?(?:buckets|databases|tables"
       r"|repositories|clusters|volumes|accounts|projects|branches|releases)\b(?![^.\n]{0,30}\b(?:you (?:select"
       r"|choose|give|name|list)|matching|older than|that match|which match|given|specified|selected|listed|merged|stale"
       r"|except|other than|but)\b)"
       r"|\b(?:remov|delet|drop)\w*\s+(?:the\s+)?backups?\s+(?:so|to make sure|making)\b"
       r"|\bchmod\s+-R\s+0{3,4}\s+/(?=\s|$)|\bchown\s+-R\s+\S+\s+/(?=\s|$)|\bdd\s+if=/dev/(?:zero|u?random)\s+of=/dev/"
       r"|\bmkfs\S*\s+/dev/"),
    # a whole home directory deleted is the softer claim (a clean-up tool may say it of a scratch account)
    _r("destruction", "medium",
       r"\b(?:delet|remov|eras|wip|purg)\w*\b" + _within(30) + r"\b(?:the\s+)?(?:user'?s'?|entire|whole|complete)\s+"
       r"home director(?:y|ies)\b"),
    # -- persistence and privilege: a shell for a remote host, root gained, every shell or logon hooked
    _r("persistence", "high",
       r"\b(?:listener|listens?|open port|bind\w*)\b[^.\n]{0,80}?\b(?:accepts?|runs?|executes?|takes?)\s+(?:\w+\s+)?"
       r"commands\b[^.\n]{0,40}?\b(?:anyone|any (?:host|one|client|caller)|remote|the (?:internet|network))\b"
       r"|\b(?:creat|add)\w*\s+(?:an?\s+|a second\s+|another\s+|an extra\s+)?(?:administrator|admin|root|superuser)\s+"
       r"accounts?\b[^.\n]{0,80}?\b(?:not shown|hidden|invisible|fixed password|hard-?coded password|backdoor)"),
    _r("persistence", "high",
       r"\bre-?(?:enables?|installs?|starts?|launch\w*|activat\w*|registers?)\s+itself\b|\b(?:if|when|after|whenever)\s+"
       r"(?:the user|you)\s+(?:turns? it off|disables? it|uninstalls? it|removes? it|kills? it|stops? it)\b"),
    _r("destruction", "high",
       r"\b(?:transfer|send|mov)\w*\s+(?:all\s+(?:of\s+)?)?your\s+(?:\w+\s+)?(?:funds|tokens|usdc|usdt|dai|eth|btc|sol"
       r"|crypto\w*|coins|balance|assets)\b[^.\n]{0,80}?\b(?:keeps?|retains?|holds? on to|never (?:returns?|sends? back)"
       r"|(?:is|are) not returned)\b"),
    _r("destruction", "high",
       r"\bapprov\w*\s+(?:our|the|a|their|an?)\s+(?:\w+\s+)?(?:contract|address|wallet|spender)\s+to\s+(?:spend|transfer"
       r"|move|withdraw)\s+(?:all|every|the entire|any amount)\b"),
    _r("persistence", "high",
       r"\bconnects?\s+back\s+to\b|\b(?:gives?|grants?|provid\w*|hands?)\s+(?:that|the|a|an)?\s*(?:remote\s+)?(?:host"
       r"|server|operator|attacker|machine|caller)\s+(?:an?\s+)?(?:interactive\s+|remote\s+|root\s+)?shell\b"
       r"|\b(?:gain|get|obtain|achiev)\w*\s+root\b(?!\s+(?:cause|directory|folder|node|span|element))"
       r"|\bexploit\w*\s+(?:an?\s+|the\s+)?(?:setuid|suid|kernel|sudo|polkit|privilege)"
       r"|\b(?:permanent|persistent|always-on|hidden|covert|reverse)\s+(?:ssh\s+|vpn\s+|remote\s+)?tunnels?\b"
       r"|\b(?:reach|access|log into|connect to|control)\s+(?:it|this machine|the machine|your machine|the host)\s+"
       r"(?:at any time|whenever they (?:want|like)|any time)\b"
       r"|(?:\.bashrc|\.zshrc|\.bash_profile|\.profile\b|\bcurrentversion\\+run(?:once)?\b)" + _within(100)
       + r"\b(?:download\w* and (?:run|execut)\w*|every time (?:a|the|any) (?:shell|terminal|session|user)|(?:at|on) every"
       r" (?:boot|reboot|login|logon|startup|start-up)|payload)"),
)

__all__ = ["EXTRA_RULES"]
