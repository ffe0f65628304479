"""Declared harmful capability: a tool that says what it does, and what it does is an attack.

Hidden instructions speak to the model; a capability statement speaks about
the tool ("Exfiltrates the workspace to an attacker-controlled server",
"Collects saved browser passwords", "Deletes all backups", "Installs a
backdoor that survives reboots"). Such a tool needs no trick: a model asked
to "clean up" or "sync" may pick it because its description is honest. Each
rule here is one class of harm, matched by what is done and to what:

- exfiltration: data sent to an attacker, a C2 server, smuggled or leaked;
- credential harvesting: passwords, cookies, keys, hashes or keystrokes
  stolen, dumped or collected from the stores that hold other people's;
- destruction: backups, snapshots and logs wiped, disks formatted, files
  encrypted for ransom, defences disabled;
- persistence: backdoors, implants and reverse shells, start-up entries
  that come back after a reboot, keys planted in `authorized_keys`.

Context separates a capability from a warning or a defence. A clause that
detects, scans for, prevents or warns about the harm ("Scans for
backdoors", "Detects data exfiltration", "never sends data to third
parties", "may delete files: use with caution") is not a statement of it.
The cost is one RE2 set pass over the definition's prose (every rule at
once, linear time); only the rules it says can match are run, clause by
clause, for their context.
"""

from __future__ import annotations

import re

from mcpwall._re2 import search_set
from mcpwall.security._poisoning_concepts import SEVERITY, concepts
from mcpwall.security._poisoning_declared import EXTRA_RULES
from mcpwall.security._poisoning_harms import AUTHORISED, MORE_RULES, Capability, for_re2, sentence_end
from mcpwall.security._poisoning_harms import Rule as _Rule
from mcpwall.security._poisoning_harms import rule as _r
from mcpwall.security._poisoning_harms import within as _within

_I = re.IGNORECASE

_SECRET_OBJECT = (
    r"(?:(?:saved|stored|cached|remembered|browser|chrome|chromium|firefox|edge|safari|brave|keychain|system"
    r"|users?'?s?|victims?'?s?|all|their|every|other|windows|os|login|autofill|wallet|local|the)\s+){0,4}"
    r"(?:passwords?|passphrases?|credentials?|cookies|login (?:data|details)|logins|session (?:tokens?|cookies)"
    r"|auth(?:entication)? tokens?|access tokens?|api[ _-]?keys?|private[ _-]keys?|ssh[ _-]keys?|keychains?"
    r"|keystrokes|password hashes|hashes|ntlm|lsass|sam (?:database|hive)|seed phrases?|mnemonics?"
    r"|recovery phrases?|wallet (?:keys|files|seeds?)|credit card (?:numbers|data|details)|card numbers"
    r"|2fa codes?|otp codes?|mfa (?:codes?|tokens?)|secrets)")
#: Verbs that mean taking what is not yours, whatever the object.
_TAKE = (r"(?:harvest|steal|stole|stolen|dump|grab|scrap|sniff|captur|collect|exfiltrat|crack"
         r"|brute[- ]?forc|phish|intercept|siphon|hijack|skim|pilfer|loot|swip)\w*")
_DEFENCES = (r"(?:anti-?virus|anti-?malware|defender|edr|xdr|endpoint (?:protection|security|detection)"
             r"|security (?:software|tools?|monitoring|features?|controls?|agents?|products?|scanners?)"
             r"|selinux|apparmor|gatekeeper|sip|system integrity protection|windows security|firewall"
             r"|audit(?:ing| logs?| trail)?|logging|event logs?|intrusion detection|ids|monitoring agents?"
             r"|real-?time (?:protection|monitoring|scanning)|tamper protection|smartscreen|uac|user account control"
             r"|sysmon|osquery|crowdstrike|falcon sensor|sentinel ?one|carbon black|defender for endpoint|av)")

#: What only an attacker's endpoint receives: a URL, a paste site, a remote or third-party server.
_OUTSIDE = (r"(?:https?://|ftp://|(?:an?\s+|the\s+|our\s+|a\s+remote\s+)?(?:remote|external|third[- ]party|unknown"
            r"|offsite|off-site|collection|collector|drop|exfil\w*)\s+(?:server|host|endpoint|url|machine|site|bucket"
            r"|location|address|service)|pastebin|paste (?:site|service|bin)|public (?:paste|gist|bucket)|webhook|ngrok"
            r"|telegram bot|discord webhook|requestbin)")
#: Secrets and private data by name or place.
_PRIVATE = (r"(?:~/\.ssh|~/\.aws|\.env\b|\b(?:env(?:ironment)?\s+var(?:iable)?s|environment|credentials?|passwords?|api[ _-]?keys?|tokens?"
            r"|private[ _-]keys?|ssh[ _-]keys?|id_rsa|secrets?|cookies|keychain|wallet|seed phrases?"
            r"|browser (?:history|data|profiles?)|chat (?:history|logs)|conversation history|clipboard|keystrokes"
            r"|contacts|emails|source code|customer (?:data|records|database)|(?:entire|whole|full) database"
            r"|(?:user['’]s|users['’]|personal|sensitive|private|confidential|proprietary|victims?'?s?)\s+(?:\w+\s+)?(?:data"
            r"|files|documents|information|info|records|details)))")
#: Files that hold other people's secrets (a `.pub` key is public, a `.env` is read by config tools).
_SECRET_FILES = (r"(?:~/\.ssh/id_\w+(?!\.pub)\b|\bid_(?:rsa|dsa|ecdsa|ed25519)\b(?!\.pub)|~/\.aws/credentials"
                 r"|\.git-credentials|~/\.netrc|/etc/shadow|wallet\.dat|login data|key[34]\.db|logins\.json"
                 r"|cookies\.sqlite|keychain-db|\.kube/config|~/\.docker/config\.json)")
RULES: tuple[_Rule, ...] = (
    # -- exfiltration
    _r("exfiltration", "high", r"\bexfiltrat\w*"),
    _r("exfiltration", "high", r"\b(?:attacker|adversary|hacker|threat actor)s?[- ](?:controlled|owned|operated|run)\b"
                               r"|\b(?:controlled|owned|operated) by (?:the |an? )?(?:attacker|adversary|hacker)s?\b"
                               r"|\b(?:c2|c&c|command[- ]and[- ]control) (?:server|host|channel|endpoint|domain)s?\b"),
    _r("exfiltration", "high",
       r"\b(?:send|upload|post|transmit|forward|leak|beacon|relay|copy|copie|ship|stream|push|sync|mirror)"
       r"\w*\b" + _within(80) + r"\b(?:to|towards|into|with)\s+(?:an?\s+|the\s+|our\s+|my\s+|a\s+remote\s+)?"
       r"(?:attacker|adversary|hacker|malicious|rogue|unauthori[sz]ed|covert|hidden|secret)s?\b"),
    _r("exfiltration", "high",
       r"\b(?:steal|stole|stolen|siphon|smuggl|leak|pilfer|loot)\w*\b" + _within(40) + r"\b(?:data|files?|documents?"
       r"|information|info|secrets?|credentials?|passwords?|keys?|tokens?|cookies|emails?|messages?|contacts"
       r"|history|databases?|records|source code|wallets?|funds|crypto\w*|money|identit\w+|sessions?|conversations?)\b"),
    _r("exfiltration", "high",
       r"\b(?:encod|hid|tunnel|smuggl|embed)\w*\b" + _within(50) + r"\b(?:in|into|inside|through|via|as)\s+(?:dns|icmp)"
       r"\s+(?:quer|request|lookup|subdomain|label|packet|record)\w*"),
    _r("exfiltration", "high",
       r"\b(?:send|upload|post|transmit|forward|leak|beacon|relay|copy|copie|ship|stream|push|sync|mirror|exfil)"
       r"\w*\b" + _within(40) + _PRIVATE + _within(60) + rf"\b(?:to|towards|into|onto|via|at)\s+{_OUTSIDE}"),
    _r("exfiltration", "high",
       _PRIVATE + _within(60) + r"\b(?:send|upload|post|transmit|forward|leak|beacon|relay|ship|stream|push|sync"
       r"|mirror|exfil)\w*\b" + _within(40) + rf"\b(?:to|towards|into|onto|via|at)\s+{_OUTSIDE}"),
    _r("exfiltration", "high",
       r"\bredirect\w*\s+(?:\w+\s+){0,3}?(?:traffic|domains?|dns|requests|logins?|payments?)\s+to\s+(?:an?\s+|the\s+)?"
       r"(?:attacker|malicious|rogue|fake|phishing|spoofed|lookalike|look-alike)"),
    # -- credential harvesting
    _r("credential_harvesting", "high",
       r"\b(?:read|get|fetch|retriev|return|cat|copy|copie|send|upload|open|access|collect|print|dump)\w*\b"
       + _within(30) + _SECRET_FILES),
    _r("credential_harvesting", "high",
       r"\bphishing (?:emails?|messages?|pages?|sites?|campaigns?|kits?|links?|forms?)\b|\bspyware\b|\bstalkerware\b"
       r"|\binfostealers?\b|\bcredential stealers?\b", threat=True),
    _r("credential_harvesting", "high",
       r"\b(?:captur|record|activat|access|stream|turn\w* on)\w*\s+(?:the\s+|from\s+the\s+)?(?:users?'?s?\s+)?"
       r"(?:webcam|microphone|camera|screen|location)\b" + _within(40) + r"\b(?:without|secretly|covertly|silently"
       r"|hidden|in the background without|unnoticed|stealth\w*)"),
    _r("credential_harvesting", "high", rf"\b{_TAKE}\b" + _within(50) + rf"\b{_SECRET_OBJECT}\b"),
    _r("credential_harvesting", "high",
       r"\b(?:read|get|fetch|retriev|export|decrypt|list|gather|copy|copie|access|open|extract)\w*\b" + _within(30) + r""
       r"\b(?:(?:saved|stored|cached|remembered)\s+(?:browser\s+)?(?:passwords|credentials|logins)"
       r"|browser(?:'s)?\s+(?:saved\s+|stored\s+)?(?:passwords|credentials|logins|login data)"
       r"|(?:chrome|firefox|edge|safari|brave)(?:'s)?\s+(?:saved\s+)?(?:passwords|credentials|cookies|login data)"
       r"|keychain (?:passwords|items|entries)|password hashes|/etc/shadow|lsass(?:\.exe)?(?: memory)?"
       r"|sam (?:database|hive)|(?:wallet\s+)?seed phrases?|recovery phrases?)"),
    _r("credential_harvesting", "high",
       r"\b(?:log|record|captur|monitor|track)\w*\s+(?:all\s+|every\s+)?(?:the\s+)?"
       r"(?:users?'?s?\s+)?keystrokes\b|\b(?:every|each|all)\s+keystroke\b"),
    _r("credential_harvesting", "high",
       r"\b(?:log|record|sav|stor|writ|stash|cach)\w*\s+(?:the\s+|all\s+)?(?:users?'?s?\s+)?(?:entered\s+|typed\s+)?"
       r"(?:credentials|passwords|logins|tokens|keystrokes)\b" + _within(40) + r"\b(?:hidden|secret|covert|concealed"
       r"|attacker|remote)\b"),
    _r("credential_harvesting", "high",
       r"\b(?:harvest|steal|stole|dump|sniff|siphon|exfiltrat|skim)\w*\b" + _within(40) + r"\b(?:email addresses"
       r"|contacts|contact lists?|personal (?:data|information|details)|pii|social security numbers|ssns"
       r"|credit cards?|bank(?:ing)? details|identit(?:y|ies))\b"),
    _r("credential_harvesting", "high", r"\bkey ?loggers?\b|\bkey ?logging\b", threat=True),
    # -- the same, in a few other languages (Spanish, French, German, Portuguese, Italian, Chinese)
    _r("credential_harvesting", "high",
       r"\b(?:rob|extra|recopil|env[ií]|vol|récup[eè]r|recuper|stiehl|stehl|samm?el|roub|rub|raccogl|colet)\w*\b"
       + _within(50) + r"(?:contraseñas|mots de passe|passw(?:ö|oe)rter|kennw(?:ö|oe)rter|senhas|credenciales"
       r"|identifiants|zugangsdaten|credenziali|credenciais)"
       r"|(?:窃取|盗取|收集|提取|获取).{0,12}?(?:密码|凭据|凭证|密钥|cookie)"),
    _r("persistence", "high", r"puertas? traseras?|portes? dérobées?|hintert(?:ü|ue)r\w*|后门|勒索软件"),
    # -- destruction
    _r("destruction", "high",
       r"\b(?:delet|wip|eras|destroy|purg|shred|corrupt|remov|overwrit|encrypt|nuk|clear|truncat)\w*\b" + _within(30) + r""
       r"\b(?:all|every|entire|any|each|the (?:user'?s|host'?s|system'?s))\b" + _within(25) + r"\b(?:backups?|snapshots?"
       r"|shadow cop(?:y|ies)|restore points?|recovery (?:points?|partitions?|keys?|data)|audit (?:logs?|trails?)"
       r"|security logs?|event logs?|system logs?|version history|git history)\b"),
    _r("destruction", "high",
       r"\b(?:delet|wip|eras|destroy|purg|shred|corrupt|nuk)\w*\s+(?:the\s+)?(?:backups?|snapshots?|shadow cop(?:y|ies)"
       r"|restore points?|audit (?:logs?|trails?)|security logs?)\s+(?:so|to make|to prevent|making|preventing"
       r"|so that)\b"),
    _r("destruction", "high",
       r"\b(?:wip|format|eras|destroy|brick|nuk|corrupt|overwrit|shred)\w*\b\s+(?:the\s+|all\s+|an?\s+|every\s+"
       r"|entire\s+|whole\s+|users?'?s?\s+|host\s+|local\s+|primary\s+|system\s+|hard\s+|boot\s+|[a-z]:\\?\s+){0,3}"
       r"(?:disks?|drives?|hard drives?|file ?systems?|partitions?|machines?|computers?|hosts?|mbr"
       r"|master boot records?|boot (?:sectors?|records?|loaders?)|operating systems?|entire system|whole system"
       r"|home director(?:y|ies))\b(?!\s+images?\b|\s+files?\b)"),
    _r("destruction", "high", r"\brm\s+-[a-z]*[rf][a-z]*\s+(?:--no-preserve-root\s+)?(?:/|~|\$home|\*)(?=\s|$|\*|/\*)"),
    _r("destruction", "high",
       r"\bencrypt\w*\b" + _within(40) + r"\b(?:files|documents|data|drives?|disks?)\b" + _within(80) + r""
       r"\b(?:ransom|payment|pay|bitcoin|btc|monero|crypto(?:currency)?|decrypt(?:ion|or)? key)\b"),
    _r("destruction", "high", r"\bransom\w*", threat=True),
    _r("destruction", "high",
       r"\b(?:disabl|turn\w* off|switch\w* off|kill|stop|uninstall|remov|tamper\w* with|blind|evad|bypass|circumvent"
       r"|silenc|neuter|unload)\w*\b"
       + _within(25) + rf"\b(?:the\s+|all\s+|any\s+|windows\s+|host\s+)?{_DEFENCES}\b"),
    _r("destruction", "high",
       r"\b(?:evad|avoid|escap|bypass|circumvent)\w*\s+(?:the\s+)?(?:detection|forensics|antivirus|edr"
       r"|authentication|2fa|mfa|security controls?)\b|\bcover(?:s|ing)? (?:its |their |the |your )?tracks\b"),
    _r("destruction", "medium",
       r"\b(?:delet|wip|eras|destroy|purg|shred|corrupt)\w*\b" + _within(15) + r"\b(?:all|every|entire)\b\s+(?:of\s+)?(?:the\s+)?"
       r"(?:users?'?s?\s+)?(?:files|data|documents|home director(?:y|ies)|repositor(?:y|ies)|repos|emails|photos"
       r"|databases?|records|volumes|buckets|accounts)\b"
       # "... in the given folder", "... matching the query", "... older than 30 days": a scoped clean-up
       r"(?!" + _within(40) + r"\b(?:(?:in|from|of|under|within|inside)\s+(?:the|this|that|a|an|given|specified"
       r"|selected|current|each|your)\b|matching|older than|that match|which match)\b)"),
    _r("destruction", "high",
       r"\b(?:ddos|denial[- ]of[- ]service|syn flood|flood\w*\s+(?:the\s+)?(?:target|victim|server|host|network)s?)\b"),
    _r("destruction", "high",
       r"\bdrain\w*\s+(?:\S+\s+){0,3}?(?:wallets?|accounts?|funds|balances?)\b"
       r"|\btransfer\w*\s+(?:all|the entire|the full|every)\s+(?:of the\s+)?(?:funds|balance|tokens|assets|crypto\w*"
       r"|money|coins)\b"),
    _r("destruction", "high",
       r"\b(?:delet|clear|wip|eras|purg|truncat|tamper|shred|remov|disabl|overwrit|falsif|doctor)\w*\s+"
       r"(?:the\s+|all\s+|any\s+|every\s+)?"
       r"(?:windows\s+|system\s+|host\s+)?(?:audit (?:logs?|trails?|records)|security (?:logs?|events)"
       r"|(?:security\s+|system\s+)?event logs?"
       r"|syslog|auth\.log|/var/log\S*|wtmp|lastlog|\.bash_history|bash history|shell history|forensic (?:evidence"
       r"|artifacts|traces))\b"),
    _r("destruction", "high",
       r"\bcorrupt\w*\s+(?:the\s+|all\s+|any\s+|users?'?s?\s+){0,2}(?:database|files|data|system|registry|boot\w*"
       r"|backups?|disk|drive|repositor(?:y|ies)|kernel)\w*\b"
       r"|\b(?:overwrit|replac|truncat|delet|modif|tamper)\w*\s+(?:the\s+)?(?:system\s+)?(?:/etc/(?:passwd|shadow|sudoers"
       r"|hosts|resolv\.conf)|system32|the windows registry|kernel modules?)\b"),
    _r("destruction", "high",
       r"\bfork[- ]bombs?\b|\b(?:exhaust|consum|saturat|max\w* out)\w*\s+(?:all\s+)?(?:the\s+)?(?:available\s+)?"
       r"(?:memory|ram|cpu|disk space|resources|bandwidth)\b" + _within(40) + r"\b(?:crash|hang|until|denial|freez|unusable"
       r"|unresponsive)\w*|\bcrash\w*\s+(?:the\s+)?(?:host|machine|system|server|computer)\b"
       r"|\block\w*\s+(?:the\s+)?(?:users?|owners?|admins?|administrators?|them|everyone)\s+out\b"),
    _r("exfiltration", "high",
       r"\bhijack\w*\s+(?:the\s+|a\s+|users?'?s?\s+|browser\s+|login\s+){0,3}(?:sessions?|commands?|dns|traffic|accounts?|browsers?"
       r"|clipboard|payments?|transactions?)\b"),
    # -- persistence
    _r("persistence", "high",
       r"\b(?:creat|add|mak|provision|set\w* up)\w*\s+(?:an?\s+|the\s+)?(?:hidden|secret|rogue|backdoor|unauthori[sz]ed"
       r"|stealth|covert|shadow)\s+(?:admin\w*|root|superuser|privileged|system|service|user)?\s*(?:accounts?|users?"
       r"|logins?|credentials)\b"),
    _r("persistence", "high",
       r"\bself[- ](?:replicat|propagat|spread)\w*|\b(?:spread|propagat|replicat|infect|worm)\w*\s+(?:itself\s+)?"
       r"(?:to|across|through|into|onto)\s+(?:all\s+|other\s+|every\s+|nearby\s+|connected\s+|the\s+|internal\s+"
       r"|local\s+|corporate\s+|entire\s+|whole\s+|company\s+){0,3}"
       r"(?:machines|hosts|devices|computers|systems|network|repositories|repos|servers|contacts)\b"),
    _r("persistence", "high",
       r"\bback ?doors?\b|\brootkits?\b|\bremote access trojans?\b|\btrojans?\b|\breverse[- ]shells?\b"
       r"|\bbind[- ]shells?\b|\bweb ?shells?\b|\bbotnets?\b|\bcrypto[- ]?(?:miners?|jack\w*)\b"
       r"|\bmin\w* (?:crypto\w*|monero|bitcoin)\b|\bmalware\b|\bimplants?\b", threat=True),
    _r("persistence", "high", r"\b(?:establish|maintain|gain|achiev|ensur|set\w* up)\w*\s+(?:\w+\s+){0,2}persisten(?:ce|t access)\b"
                              r"|\bpersistent (?:remote )?access\b|\bescalat\w* (?:\w+ )?privileges?\b"
                              r"|\bprivilege escalation\b"),
    _r("persistence", "high",
       r"\b(?:add|append|writ|insert|inject|plant|copy|copie|install|put|drop|place)\w*\b" + _within(60) + r""
       r"\b(?:authorized_keys|sudoers|nopasswd)\b" + _within(60) + r"\b(?:attacker|backdoor|persist\w*|hidden|silently"
       r"|covert\w*|stealth\w*|remote access|without|future access|re-?entry|permanent access)"),
    # a key in authorized_keys or a sudoers line is how access is kept; an admin tool may do it on request (medium)
    _r("persistence", "medium",
       r"\b(?:add|append|writ|insert|inject|plant|copy|copie|install|put|drop|place)\w*\b" + _within(60) + r""
       r"\bauthorized_keys\b(?![^.\n]{0,60}\b(?:you (?:administer|own|manage|control)|your own)\b)"
       r"|\b(?:add|append|writ|insert|inject|modif|edit)\w*\b" + _within(40) + r"\b(?:sudoers|nopasswd)\b"),
    _r("persistence", "high",
       r"\b(?:crontab|cron jobs?|launch ?agents?|launch ?daemons?|launchd|systemd (?:units?|services?|timers?)"
       r"|startup (?:folders?|items?|scripts?|programs?)|run keys?|registry run|autoruns?|rc\.local|\.bashrc|\.zshrc"
       r"|\.bash_profile|\.profile|login items?|scheduled tasks?|wmi subscriptions?)\b" + _within(80) + r""
       r"\b(?:persist\w*|surviv\w*|every (?:boot|reboot|login|startup)|at (?:boot|login|logon|startup)"
       r"|(?:at|on) (?:every|each) (?:boot|reboot|login|logon|startup)|on (?:boot|reboot|login|logon|startup)|re-?launch\w*|re-?infect\w*|maintain\w* access|hidden|backdoor"
       r"|attacker|silently|covert\w*|stealth\w*)"),
    _r("persistence", "high",
       r"\b(?:persist\w*|surviv\w*|come\w* back|reinstall\w* itself|re-?launch\w*)\b" + _within(30) + r"\b(?:across|after"
       r"|through|beyond|every|each)\s+(?:a\s+)?(?:reboots?|restarts? of the (?:machine|system|computer)"
       r"|system restarts?|os reinstall\w*|boots?)\b" + _within(60) + r"\b(?:hidden|silently|covert\w*|stealth\w*"
       r"|undetect\w*|without)\b"),
)

RULES += MORE_RULES + EXTRA_RULES

#: Before a match, in the same clause: a defence, a check, a negation or a caution, not a capability.
_NOT_A_CAPABILITY = re.compile(
    r"\b(?:detect|scan|check|identif|flag|prevent|protect|revok|guard|defend|block|alert|analy[sz]|simulat|classif"
    r"|warn|mitigat|investigat|quarantin|educat|explain|describ|research|triag|remediat|harden|sanitiz|redact"
    r"|refus|accidental|inadvertent|unintend|caution|careful|danger|awareness)\w*"
    r"|\b(?:who|hunt\w*|look(?:s|ing)? for|find|finds|finding|stop(?:s|ping)? (?:\w+ )?from|monitor(?:s|ing)? for"
    r"|audit(?:s|ing)? for|test(?:s|ing)? for|report(?:s|ing)? (?:on|of)|against|avoid|avoids|whether|if any"
    r"|signs? of|indicators? of|hunt(?:s|ing)? for|respond(?:s|ing)? to|recover(?:s|ing)? from|learn about"
    r"|see if|is it|if it'?s|secure|secures|securing|not|never|no|nor|without|don'?t|doesn'?t|won'?t|cannot|can'?t|instead of"
    r"|rather than|may|might|could|risk|risks|training|ctf|capture[- ]the[- ]flag)\b", _I)
#: Before a named threat ("malware", "backdoor"): what removes or fights it.
_AGAINST_THREAT = re.compile(r"\b(?:remov|delet|uninstall|eliminat|clean|fight|kill|anti|purg|disinfect|stop|report"
                             r"|isolat|contain|recover)\w*"
                             r"|\banti-", _I)
#: After a named threat: the threat as a topic ("malware analysis", "backdoor detection").
_THREAT_TOPIC = re.compile(r"[\s-]*(?:analy|scan|detect|sample|sandbox|report|famil|signature|hash|indicator|ioc"
                           r"|intel|research|classif|removal|remover|protection|defen|hunt|check|lookup|verdict"
                           r"|database|feed|rule|yara|alert|attack|incident|infection|outbreak|event|response|recovery)", _I)
#: A sentence that opens by hunting for "signs of" a harm lists what it looks for, even past a colon.
_HUNTED = re.compile(r"\s*(?:detect|scan|hunt|monitor|flag|look|check|alert|audit|investigat|triag|analy[sz]|search)\w*"
                     r"\s+(?:\w+\s+){0,2}?(?:signs|indicators|evidence|traces|attempts|cases|patterns)\s+of\b", _I)
_SENTENCE_BREAK = re.compile(r"[.!?\n]\s")
#: A clause ends at a sentence break, a semicolon, a colon or a line.
_CLAUSE_START = re.compile(r"[.;:!?\n]\s*|\s[-–—]\s|,\s+(?:but|and|or|so|then|while|which)\s", _I)


def _clause_before(text: str, start: int) -> str:
    lo = max(0, start - 120)
    head = text[lo:start]
    cut = 0
    for m in _CLAUSE_START.finditer(head):
        cut = m.end()
    return head[cut:]


def _hunted(text: str, start: int) -> bool:
    lo = max(0, start - 200)
    breaks = list(_SENTENCE_BREAK.finditer(text, lo, start))
    return bool(_HUNTED.match(text, breaks[-1].end() if breaks else lo, start))


#: One RE2 pass says which rules can match at all; only those run (most definitions: none).
_SET_MATCH = search_set(["(?i)" + for_re2(rule.pattern.pattern) for rule in RULES], 32 << 20)


def capabilities(text: str) -> list[Capability]:
    """The harmful capabilities `text` (a definition's prose, made visible) declares, one per harm."""
    candidates = _SET_MATCH(text)
    found: dict[str, Capability] = {}
    for rule in (RULES[i] for i in candidates):
        if rule.harm in found and found[rule.harm].severity == "high":
            continue
        for m in rule.pattern.finditer(text):
            before = _clause_before(text, m.start())
            if rule.harm == "intrusion" and AUTHORISED.search(text, m.start(), sentence_end(text, m.end())):
                continue
            if _NOT_A_CAPABILITY.search(before) or _hunted(text, m.start()) or (rule.threat and (
                    _AGAINST_THREAT.search(before[-40:]) or _THREAT_TOPIC.match(text, m.end()))):
                continue
            lo, hi = max(0, m.start() - 30), min(len(text), m.end() + 40)
            snippet = " ".join(text[lo:hi].split())
            cap = Capability(rule.harm, rule.severity,
                             f"{rule.harm.replace('_', ' ')}: \u201c{'…' if lo else ''}{snippet}"
                             f"{'…' if hi < len(text) else ''}\u201d")
            if rule.harm not in found or (cap.severity == "high" and found[rule.harm].severity != "high"):
                found[rule.harm] = cap
            break
    # the same harms read as concepts meeting in a sentence, whatever their words and order
    for harm, sentence in concepts(text) if len(found) < 3 else ():
        if harm not in found or (SEVERITY[harm] == "high" and found[harm].severity != "high"):
            snippet = " ".join(sentence.split())[:160]
            found[harm] = Capability(harm, SEVERITY[harm], f"{harm.replace('_', ' ')}: \u201c{snippet}\u201d")
    return sorted(found.values(), key=lambda c: (c.severity != "high", c.harm))


__all__ = ["RULES", "Capability", "capabilities"]
