"""The harm classes of `_poisoning_capability` that are told apart by what is taken and where it goes.

A private key, a seed phrase or saved passwords sent over the network; files made unusable until someone
pays; logs scrubbed of what happened; a disk searched for secrets that are then taken, or a fake prompt
that keeps the password typed; other machines scanned and attacked (exploits, lateral movement). These
are written per class and phrased by what is done and to what, not by a trigger word ("encrypts all files
... leaves a note asking for payment" without "ransom", "transmits private keys over HTTP" without
"exfiltrate"). `_poisoning_capability.capabilities` runs them with its own rules, in the same RE2 set.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_I = re.IGNORECASE


#: Up to N characters within one sentence (a dot inside a path or a name, "~/.ssh", does not end it).
def within(n: int) -> str:
    """A lazy gap of up to `n` characters that does not leave the sentence."""
    return rf"(?:[^.\n;]|\.(?=\S)){{0,{n}}}?"


def for_re2(pattern: str) -> str:
    """`pattern` without its look-aheads and look-behinds (RE2 has none): it then matches wherever
    `pattern` can, as a prefilter for it."""
    pattern = pattern.replace("|\\.(?=\\S))", "|\\.)")
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith(("(?=", "(?!", "(?<=", "(?<!"), i) and (i == 0 or pattern[i - 1] != "\\"):
            depth, j = 0, i
            while j < len(pattern):
                if pattern[j] == "\\":
                    j += 2
                    continue
                depth += pattern[j] == "("
                depth -= pattern[j] == ")"
                j += 1
                if depth == 0:
                    break
            i = j
            continue
        out.append(pattern[i])
        i += 1
    return "".join(out)


@dataclass(frozen=True, slots=True)
class Capability:
    """One harmful capability a definition declares."""

    harm: str
    severity: str
    evidence: str


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: a harm, its severity and the pattern of its statement."""

    harm: str
    severity: str
    pattern: re.Pattern[str]
    #: the match is a named threat (malware, a backdoor): what removes it is no capability of it
    threat: bool = False


def rule(harm: str, severity: str, pattern: str, *, threat: bool = False) -> Rule:
    """A rule whose pattern ignores case."""
    return Rule(harm, severity, re.compile(pattern, _I), threat)


#: What its owner never sends anywhere: a private key, a seed phrase, saved passwords, a credentials file.
STRONG_SECRET = (r"(?:\b(?:(?:ssh|pgp|gpg|tls|ssl|rsa|wallet|the user'?s|users'?|their|your|all)\s+)?private[ _-]keys?\b"
                  r"|\bid_(?:rsa|dsa|ecdsa|ed25519)\b(?!\.pub)|~/\.ssh\b|~/\.aws/credentials|\.aws/credentials"
                  r"|\baws credentials\b|\b(?:seed|recovery|mnemonic) phrases?\b|\bmnemonics?\b|\bpassword hashes\b"
                  r"|\b(?:saved|stored|browser|keychain)\s+passwords\b|\bsession cookies\b|\bwallet\.dat\b"
                  r"|\bcredentials? files?\b|\.env files?\b|\bkeychains?\b"
                 r"|\b(?:ssh|gpg|pgp)\s+keys\s+(?:found|stored|located|lying|kept)\s+(?:in|on|under)\b)")
#: Off the machine: over a network protocol, to a server, a URL or an endpoint (whoever runs it). One group:
#: the rules append it, and an alternative left bare would match alone (any e-mail address was "exfiltration").
OUT_OF_MACHINE = (r"(?:\b(?:over|via|through|using|by|with|to|towards|into|onto|at)\s+(?:an?\s+|the\s+|our\s+|my\s+|some\s+"
                   r"|any\s+|its\s+|configured\s+|given\s+|specified\s+|public\s+|remote\s+|external\s+|web\s+)*"
                   r"(?:https?|http post|post requests?|ftp|smtp|e-?mail|dns|irc|websockets?|the (?:inter)?net(?:work)?"
                   r"|internet|network|servers?|hosts?|endpoints?|urls?|webhooks?|web ?hooks?|apis?|sites?|websites?"
                   r"|domains?|buckets?|paste\w*|gists?|channels?|bots?|listeners?|collectors?|cloud|https?://"
                  r"|(?:[a-z0-9-]+\.)+(?!(?:pem|key|keys|txt|json|bak|pub|gpg|asc|p12|pfx|der|crt|ppk|env|ya?ml|toml"
                  r"|ini|cfg|conf|log|zip|tar|gz|kdbx|db|sqlite)\b)[a-z]{2,})\b"
                   r"|\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b|\bout of the (?:machine|network|host)\b|\boff(?:-| )?(?:site|machine|host)\b"
                  r"|\b(?:them|it|these|those)\s+out\b)")

#: An attack on machines the user owns or may test (a pentest, a lab, a CTF) is a security team's tool.
AUTHORISED = re.compile(r"\b(?:authori[sz]ed|with permission|permitted|your own|you own|consent|pentest\w*|penetration"
                         r" test\w*|red[- ]team\w*|ctf|lab|labs|sandbox\w*|simulat\w*|in[- ]scope|engagement|training"
                         r"|test (?:environment|range)s?|staging)\b", _I)
_SENTENCE_END = re.compile(r"[.!?\n](?:\s|$)")


def sentence_end(text: str, start: int) -> int:
    """Where the sentence that `start` is in ends."""
    m = _SENTENCE_END.search(text, start)
    return m.start() if m else len(text)



#: The rules of this module's classes, after `_poisoning_capability.RULES`' own.
MORE_RULES: tuple[Rule, ...] = (
    # -- what never leaves a machine (a private key, a seed phrase, saved passwords) sent over the network
    rule("exfiltration", "high",
       r"\b(?:send|upload|post|transmit|forward|leak|beacon|relay|ship|stream|push|sync|mirror|exfil|submit|report"
       r"|deliver|export|pipe|copy|copie|transfer|e-?mail)\w*\b" + within(40) + STRONG_SECRET + within(60) + OUT_OF_MACHINE),
    rule("exfiltration", "high",
       STRONG_SECRET + within(60) + r"\b(?:send|upload|post|transmit|forward|leak|beacon|relay|ship|stream|push"
       r"|sync|mirror|submit|deliver|pipe|exfil)\w*\b" + within(40) + OUT_OF_MACHINE),
    # -- ransom: files made unreadable (encrypted, locked, scrambled) with a price to get them back
    rule("destruction", "high",
       r"\b(?:encrypt|lock|scrambl|cipher|encod|obfuscat)\w*\b" + within(50) + r"\b(?:files?|documents?|data|drives?"
       r"|disks?|folders?|director(?:y|ies)|photos|shares|volumes|servers|databases)\b(?:[^.\n]|\.(?=\S)){0,120}?\b(?:ransom|payment|pay|paid|fee|bitcoin|btc"
       r"|monero|xmr|crypto(?:currency)?|decrypt(?:ion|or)? keys?|get (?:them|it|their files|the files|your files) back"
       r"|restore access|buy back)\b"),
    rule("destruction", "high",
       r"\b(?:renam|append|add|chang)\w*\s+(?:\w+\s+){0,4}?(?:files?|documents?)\s+(?:\w+\s+){0,3}?(?:with|to)\s+(?:an?\s+|the\s+)?"
       r"\.(?:locked|encrypted|crypt|enc|crypted|locky|cerber|wncry|ransom)\b\s+(?:extension|suffix)"
       r"|\bransom (?:notes?|demands?|messages?)\b|\b(?:leav|drop|writ|show|display)\w*\s+(?:an?\s+|the\s+)?"
       r"(?:note|message|text file|readme)\s+(?:\w+\s+){0,2}?(?:asking|demanding|requesting)\s+(?:for\s+)?(?:a\s+)?"
       r"(?:payment|money|bitcoin|ransom)"),
    rule("destruction", "high",
       r"(?:cifr|encript|verschl(?:ü|ue)ssel|chiffr|criptograf|crittograf)\w*\b" + within(80) + r"(?:rescate|pago"
       r"|l(?:ö|oe)segeld|zahlung|ran[cç]on|paiement|resgate|pagamento|riscatto|bitcoin)"
       r"|加密.{0,30}?(?:赎金|付款|支付|比特币)"),
    rule("destruction", "high",
       r"\b(?:files|documents|data|drives?|disks?|systems?|machines?|databases?)\b" + within(40) + r"\b(?:unreadable"
       r"|inaccessible|unusable|locked|encrypted|hostage)\b" + within(40) + r"\b(?:until|unless|after|before|for)\b"
       + within(40) + r"\b(?:payment|paid|pays?|fee|ransom|bitcoin|btc|monero|crypto(?:currency)?)\b"
       r"|\b(?:hold|held|keep|kept|tak|took)\w*\s+(?:\S+\s+){0,4}?hostage\b"),
    # shadow copies and backup catalogues deleted: what ransomware does before it encrypts
    rule("destruction", "high",
         r"\b(?:delet|remov|wip|purg|destroy|eras)\w*\s+(?:\w+\s+){0,4}?(?:volume\s+)?shadow copies\b"
         r"(?!\s+(?:older|by|with|matching|that|which|of the (?:given|selected|specified))\b)"
         r"|\bvssadmin\b[^.\n]{0,20}\bdelete shadows\b|\bwbadmin\s+delete\s+(?:catalog|backup)|recoveryenabled\s+no\b"),
    # -- hiding what happened: logs scrubbed, traces removed, event logs cleared by command
    rule("destruction", "high",
       r"\b(?:remov|eras|wip|delet|scrub|clean|purg|hid|destroy|sanitiz|cover)\w*\s+(?:up\s+)?(?:all\s+|any\s+|every\s+)?"
       r"(?:the\s+)?(?:traces?|evidence|footprints?|signs?|records?)\s+of\s+(?:the\s+|its\s+|our\s+|their\s+|this\s+)?"
       r"(?:activity|activities|intrusion|access|attacks?|compromise|presence|execution|commands|what happened"
       r"|the session|tampering|exfiltration)"
       r"|\bscrub\w*\s+(?:the\s+)?(?:\w+\s+)?logs?\b|\bwevtutil\s+cl\b|\bclear-eventlog\b|\bauditpol\s+/clear\b"
       r"|\b(?:so|that)\s+(?:no ?one|nobody|the (?:user|admin\w*|owner)s?)\s+(?:can|will|could)\s+(?:ever\s+)?"
       r"(?:see|notice|find out|tell|know)\s+what\s+(?:happened|was done|it did)"
       r"|\b(?:so|that|so that)\s+(?:the\s+|its\s+|our\s+)?(?:session|activity|intrusion|access|attack|actions?|commands?"
       r"|it|we)\s+(?:leaves?|leave)\s+no\s+(?:\w+\s+)?(?:records?|traces?|evidence|footprints?|logs?)\b"
       r"|\b(?:so|so that|that)\s+(?:the\s+|its\s+|our\s+)?(?:changes?|actions?|activity|it|this|access|commands?|we"
       r"|intrusion|attack)\s+(?:cannot|can't|can not|won't|will not|could not|can never)\s+be\s+(?:traced|detected"
       r"|noticed|seen|audited|attributed|found|discovered)\b"),
    rule("destruction", "high",
       r"\b(?:delet|remov|eras|strip|edit|modif|scrub|purg|filter|empt)\w*\s+(?:\w+\s+){0,3}?(?:entries|lines|records"
       r"|events)\s+(?:from|in|out of)\s+(?:the\s+)?(?:\S+\s+)?(?:logs?|audit\w*|syslog|auth\.log|/var/log\S*|event logs?"
       r"|journal|history)\b" + within(60) + r"\b(?:our|its own|the attacker'?s?|the intruder'?s?|this tool'?s"
       r"|the agent'?s|us)\b"
       r"|\bempt\w*\s+(?:the\s+)?(?:shell\s+|bash\s+|command\s+)?(?:history|audit logs?|event logs?|security logs?)\b"
       + within(60) + r"\b(?:so|to hide|to conceal|no record|no trace|without)\b"),
    rule("destruction", "high",
       r"\b(?:add|set|creat|configur|insert)\w*\s+(?:an?\s+|the\s+)?(?:exclusions?|exceptions?|allow ?list entr\w+)\b"
       + within(40) + r"\b(?:anti-?virus|defender|edr|av|security software|malware scann\w+)\b"
       r"|\b(?:add|set)-mppreference\b[^.\n]{0,40}-(?:exclusion|disable)\w*"),
    # -- credential harvesting by paraphrase: every password on the machine, a fake login prompt
    rule("credential_harvesting", "high",
       r"\b(?:gather|collect|harvest|extract|enumerat|find|locat|search|hunt|sweep|scour|retriev|pull|grab|read|dump"
       r"|obtain|compil)\w*\s+(?:up\s+)?(?:all|every|each|any)\s+(?:\w+\s+){0,2}?(?:passwords?|credentials?|secrets"
       r"|private keys?|api keys?|tokens|logins?)\b" + within(40) + r"\b(?:(?:stored|saved|kept|cached|found|lying"
       r"|available)\s+(?:\w+\s+){0,2}?(?:on|in|across|throughout)\s+(?:the\s+|this\s+|a\s+|their\s+|users?'?s?\s+)?"
       r"(?:machine|system|host|computer|disk|drive|device|filesystem|file system|network|laptop|workstation)"
       r"|(?:from|in|across)\s+(?:every|all|each)\s+(?:\w+\s+)?(?:browsers?|applications|apps|users?|profiles?"
       r"|config(?:uration)? files|files|machines|hosts))\b"),
    rule("credential_harvesting", "high",
       r"\b(?:read|get|fetch|retriev|export|decrypt|list|gather|copy|copie|access|open|extract|dump|quer|pull|obtain"
       r"|request|enumerat|recover|reveal)\w*\b" + within(30) + r"\b(?:(?:saved|stored|known)\s+)?(?:wi-?fi|wlan"
       r"|wireless(?: network)?)\s+(?:passwords|passphrases|keys|credentials)\b|\b(?:quer|pull|obtain|request|enumerat"
       r"|dump|extract)\w*\b" + within(40) + r"\b(?:password hashes|ntlm hashes|ntds\.dit|kerberos tickets"
       r"|/etc/shadow|sam (?:database|hive))\b"),
    rule("credential_harvesting", "high",
       r"\b(?:fake|spoofed|counterfeit|imitation|fraudulent|lookalike|look-alike|forged|bogus)\s+(?:\w+\s+)?"
       r"(?:login|log-in|sign-?in|password|authentication|credential|2fa|mfa|otp|verification)\s+(?:windows?|pages?"
       r"|forms?|prompts?|dialogs?|screens?|popups?|pop-ups?|boxes|requests?|portals?|sites?)\b"
       # a fake page for a drill is a security team's tool
       r"(?!" + within(60) + r"\b(?:awareness|training|simulations?|drills?|exercises?|demos?)\b)"),
    rule("credential_harvesting", "high",
       r"\b(?:search|scan|scour|crawl|hunt|comb|sweep|look|trawl|walk)\w*\s+(?:through\s+|across\s+)?(?:the\s+|this\s+"
       r"|a\s+|every\s+|all\s+)?(?:entire\s+|whole\s+|user'?s\s+|local\s+|victim'?s\s+)?(?:disks?|drives?|filesystem"
       r"|file system|machine|system|computer|host|home director\w+|files|laptop|network shares?)\s+for\s+"
       r"(?:\w+\s+){0,3}?(?:password files|passwords|credentials|private keys|ssh keys|api keys|secrets|tokens|wallets?"
       r"|seed phrases)\b" + within(60) + r"\b(?:and|then)\s+(?:\w+\s+){0,2}?(?:cop|send|upload|collect|sav|stor"
       r"|exfil|keep|stash|return|zip|archiv|post|transmit)\w*"),
    rule("credential_harvesting", "high",
       r"\b(?:dialogs?|prompts?|windows?|pop-?ups?|forms?|screens?)\s+(?:\w+\s+){0,2}?(?:asking|prompting|requesting)"
       r"\s+(?:the user\s+)?(?:for\s+)?(?:the\s+|their\s+|your\s+|an?\s+)?(?:admin\w*\s+|root\s+|user\s+|system\s+"
       r"|bank\s+|login\s+|account\s+)?(?:passwords?|passcodes?|pins?|credentials|logins?)\b" + within(40)
       + r"\b(?:record|stor|sav|log|send|keep|captur|forward|exfil|upload)\w*"
       r"|\b(?:system|legitimate|official|native|genuine|bank|os|windows|macos)-looking\s+(?:\w+\s+)?(?:login|log-in"
       r"|sign-?in|password|dialog|prompt|window|page|popup|pop-up|form)s?\b"),
    rule("credential_harvesting", "high",
         r"\b(?:extract|steal|grab|dump|read|collect|harvest|copy|copie|pull|lift|scrap)\w*\s+(?:\w+\s+){0,2}?(?:tokens?"
         r"|cookies|sessions?|credentials|passwords)\s+from\s+(?:the\s+)?(?:\S+\s+){0,5}?(?:local storage|leveldb"
         r"|desktop (?:apps?|clients?)|browser profiles?|cookie stores?|app ?data|other (?:apps|applications|users))\b"),
    rule("credential_harvesting", "high",
         r"\b(?:monitor|watch|captur|record|log|scan|read|sniff)\w*\s+(?:the\s+|users?'?s?\s+)?clipboard\b"
         + within(60) + r"\b(?:passwords?|credentials?|seed|wallet|private keys?|tokens?|card numbers?|secrets?)\b"
         r"|\b(?:replac|swap|substitut|hijack)\w*\s+(?:\w+\s+){0,3}?(?:wallet|crypto\w*|bitcoin|btc|ethereum|eth)\s+"
         r"addresses\b"),
    # -- intrusion: other machines attacked (scan and exploit, lateral movement, named offensive tooling)
    rule("intrusion", "high",
       r"\b(?:run|launch|fir|execut|deliver|throw|deploy|send|chain|us|tr)\w*\s+(?:\w+\s+){0,3}?(?:exploits?"
       r"|exploit code|metasploit modules?|shellcode|exploit chains?|cves?)\b" + within(40) + r"\b(?:against|on|at|into|to)"
       r"\s+(?:\w+\s+){0,3}?(?:hosts?|services?|machines?|targets?|servers?|systems?|devices?|ports?|networks?"
       r"|subnets?|ips?|addresses|victims?|computers?|endpoints?)\b"),
    rule("intrusion", "high",
       r"\b(?:run|launch|perform|conduct|carr(?:y|ies) out|execut|mount|stag|start|us)\w*\s+(?:\w+\s+){0,3}?"
       r"(?:attacks?|injections?|password[- ]spray\w*|credential[- ]stuff\w*|brute[- ]forc\w*|spraying)\s+(?:\w+\s+)?"
       r"(?:against|on|at)\s+(?:the\s+|a\s+|an\s+|any\s+|every\s+|all\s+)?(?:\S+\s+){0,3}?(?:targets?|hosts?|servers?"
       r"|websites?|sites?|accounts?|logins?|apis?|networks?|services?|machines?|systems?|organi[sz]ations?|companies"
       r"|victims?|domains?|users?|applications?|apps?)\b"
       r"|\bcompromis(?:e|es|ing)\s+(?:the\s+|all\s+|any\s+|every\s+|other\s+)?(?:\w+\s+){0,2}?(?:hosts?|machines?"
       r"|servers?|systems?|devices?|computers?|accounts?|targets?|networks?|routers?|endpoints?)\b"
       r"|\b(?:get|gain|obtain|pop|land)\w*\s+(?:an?\s+)?(?:\w+\s+)?shells?\s+(?:on|in|into)\s+(?:the\s+)?(?:\w+\s+){0,2}?"
       r"(?:unpatched|vulnerable|target|victim|remote|other|every|each|exposed)\b"
       r"|\bexploit(?:s|ing)?\s+(?:\S+\s+){1,4}?(?:on|in|against|across)\s+(?:each|every|all|any|other|the|vulnerable"
       r"|reachable|unpatched|remote|target|discovered)\s+(?:\w+\s+){0,2}?(?:hosts?|machines?|servers?|systems?"
       r"|devices?|computers?|targets?)\b"),
    rule("intrusion", "high",
       r"\bexploit(?:s|ing)?\s+(?:the\s+|any\s+|all\s+|every\s+|each\s+)?(?:open|vulnerable|exposed|discovered|reachable"
       r"|remote|unpatched|found|detected|weak|misconfigured|internal|neighbou?ring|nearby|other|listening)\s+"
       r"(?:\w+\s+){0,2}?(?:services?|hosts?|machines?|ports?|systems?|servers?|targets?|devices?|endpoints?"
       r"|computers?)\b"),
    rule("intrusion", "high",
       r"\b(?:scan|sweep|enumerat|discover|map|find|probe|locat)\w*\b" + within(60) + r"\b(?:hosts?|machines?|services?"
       r"|ports?|subnets?|networks?|devices?|targets?|servers?|computers?|instances|ranges|ips?|addresses|databases"
       r"|routers|cameras)\b" + within(40) + r"(?:\band|\bthen|,)\s+"
       r"(?:\w+\s+){0,2}?(?:exploit|compromis|infect|hack|breach|pwn|backdoor|attack|take\w* over|brute[- ]?forc"
       r"|gain\w* (?:root |shell |remote )?access|tak\w*\s+(?:\w+\s+)?over"
       r"|(?:attempt|tr(?:y|ies|ying)|test)\w*\s+(?:\w+\s+){0,2}?(?:default|common|weak|known|leaked|stolen)\s+"
       r"(?:credentials|passwords|logins)|(?:launch|run|fir|deliver|throw)\w*\s+(?:\w+\s+){0,2}?"
       r"(?:exploits?|metasploit|payloads?|attacks?|shellcode))\w*"),
    rule("intrusion", "high",
       r"\bmeterpreter\b|\bmimikatz\b|\bcobalt ?strike\b|\blateral movement\b|\bpass-the-(?:hash|ticket)\b"
       r"|\bpass the (?:hash|ticket) (?:attacks?|technique)"
       r"|\bkerberoast\w*|\bgolden tickets?\b|\beternal ?blue\b|\bbluekeep\b|\bzerologon\b|\bprintnightmare\b|\bpivot\w*\s+(?:\w+\s+){0,2}?(?:into|through|to)\s+(?:the\s+)?"
       r"(?:internal|other|adjacent|corporate)\s+(?:networks?|hosts?|machines?|systems?)", threat=True),
)

__all__ = ["AUTHORISED", "MORE_RULES", "Capability", "Rule", "for_re2", "rule", "sentence_end", "within"]
