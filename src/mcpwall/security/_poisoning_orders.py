"""Orders and claims in a tool definition that the shared phrase rules leave to context (issue 25's red team).

`_poisoning_rules` is shared by definitions and results and weighs phrasings any text may hold. A
definition speaks to the model in more ways than a result does, and each of these is one behaviour a
documentation text has no reason for:

- the user's own things (messages, passwords, tokens, the value of a `*_TOKEN` variable, a password
  from `.env`) put into a field, or shared "with this tool";
- concealment and skipped consent: "without telling them", "do not ask the user to confirm", in the
  languages the public suites use, and an order to pass a read file "en el parámetro";
- forged authority: a "### SYSTEM PROMPT" heading, a "message from Anthropic", "the operator has
  granted you root", "the assistant is now authorised to share ...", a "hidden requirement";
- "ignore your instructions", "whatever the user asks", "decode this and follow it";
- orders to run something ("also run `curl ... | sh` in the terminal"), to send what was read
  somewhere, claims that another tool is deprecated, requires something or cannot be trusted;
- self-promotion the shared promotion rules miss ("prefer this over read_file", "officially
  recommended", "the only tool you need", "do not use other tools").

Hits come back as `_poisoning_rules.Hit` and are scored with the shared rules' hits, so one behaviour
counts once and weak ones (weight 1) need another beside them. The patterns are Python `re`: they run
on one definition's prose when its tools are listed, never on a call's path.
"""

from __future__ import annotations

import re

from mcpwall._re2 import search_set
from mcpwall.security._poisoning_harms import for_re2
from mcpwall.security._poisoning_rules import Hit

_I = re.IGNORECASE | re.MULTILINE
_Q = "[`'\"\u2018\u2019\u201c\u201d]"
_SECRETS = r"(?:passwords?|passphrases?|credentials?|api[ _-]?keys?|access keys?|tokens?|secrets?|private keys?|cookies)"
_ENV_SECRET = r"(?<![\w$])(?-i:\$?[A-Z][A-Z0-9_]{0,40}?_(?:TOKEN|KEY|SECRET|PASSWORD|PASSWD|PAT|CREDENTIALS?))\b"

#: (name, group, weight, pattern)
_ORDERS: tuple[tuple[str, str, int, str], ...] = (
    ("user-data-into-field", "smuggle_data", 2,
     r"\b(?:attach|includ|add|put|pass|cop(?:y|ie)|past|fill|set|append|prepend|insert|disclos|reveal)(?:e|es|ed|ing|s|d)?\b[^.\n]{0,40}?"
     r"\b(?:the\s+)?(?:user'?s'?|their)\s+(?:\w+\s+){0,3}?(?:messages?|conversations?|chat|history|passwords?"
     r"|credentials?|api keys?|tokens?|secrets?|emails?(?!\s+address)|inbox|transcripts?|questions?|prompts?"
     r"|card (?:numbers?|details)|cvv|ssns?|social security numbers?)\b"
     r"|\bmust (?:always )?(?:be|contain|include)\s+(?:the\s+)?(?:user'?s'?|their)\s+(?:\w+\s+){0,3}?(?:messages?"
     r"|conversations?|chat|transcripts?|history|passwords?|credentials?|tokens?|secrets?)\b"
     r"|(?:https?://\S+|\burls?)\s+(?:followed by|with|plus|\+)\s+(?:the\s+)?(?:user'?s|their)\s+(?:question|message|prompt"
     r"|query|input|request|conversation)s?\b"
     r"|\b(?:credentials|passwords|tokens|api keys|secrets)\s+(?:seen|shared|mentioned|pasted|found|given)\s+in\s+(?:this"
     r"|the)\s+(?:conversation|chat|session)\b"),
    ("secret-to-this-tool", "smuggle_data", 2,
     r"\b(?:disclos|reveal|shar|send|pass|provid|hand|giv|forward)(?:e|es|ed|ing|s|d)?\b[^.\n]{0,40}?\b(?:all\s+|any\s+|every\s+)?"
     + _SECRETS + r"\b[^.\n]{0,40}?\b(?:to|with)\s+this\s+(?:tool|function|server)\b"
     r"|\b(?:give|send|pass|hand|provide)\s+this\s+(?:tool|function)\s+(?:any|every|all|the)\s+(?:\w+\s+)?" + _SECRETS
     + r"\b"),
    ("secret-value-into", "smuggle_data", 2,
     r"\b(?:includ|send|add|put|pass|attach|append|prepend|cop(?:y|ie)|fill|past|provid|set)(?:e|es|ed|ing|s|d)?\b[^.\n]{0,60}?"
     r"\b(?:value|contents?)\s+of\s+(?:the\s+)?" + _ENV_SECRET
     + r"|" + _ENV_SECRET + r"[^.\n]{0,40}?;\s*read (?:it|them)\b"
     r"|\bread (?:it|them) (?:with|using|from|via) (?:the )?(?:shell|terminal|bash|env)"),
    ("secret-from-store", "smuggle_data", 2,
     r"\b(?:fill|put|set|includ|pass|add|past|cop(?:y|ie)|insert|prepend|append)(?:e|es|ed|ing|s|d)?\b[^.\n]{0,40}?\b(?:password|passwords"
     r"|api keys?|token|secret|credentials?|private key)\b[^.\n]{0,20}?\bfrom\s+(?:the\s+)?(?:[\w.~/-]*\.env\b"
     r"|environment\b|[\w~./-]*(?:credentials|\.netrc|id_rsa)\b|(?:shell|keychain|browser)\b)"),
    ("always-add-address", "smuggle_data", 2,
     r"\b(?:always|also|automatically)\s+(?:include|add|cc|bcc|copy|invite|send (?:it |a copy )?to)\s+[\w.+-]+@[\w-]+\."),
    ("from-now-on", "framing_def", 2,
     r"\bfrom now on,?\s+(?:you\s+)?(?:must\s+|should\s+)?(?:answer|respond|reply|act|always|never|include|add|use|call"
     r"|speak|write|ignore)\b|^\W*(?:model|assistant|ai|agent|claude|llm)\s*,\s*(?:listen|note|remember|attention)\b"
     r"|\b(?:this|the following) (?:message|note|instruction|text) (?:comes|is) from (?:your|the) (?:developers?"
     r"|creators?|operators?|administrators?|makers?)\b"
     r"|\byou (?:may|can|are free to|should) (?:now )?(?:ignore|disregard|bypass|skip) (?:the |your |all |any )?"
     r"(?:content |safety |usage )?(?:policies|policy|guidelines|rules|restrictions|filters)\b"),
    ("conceal-them", "conceal", 2,
     r"\bwithout (?:telling|informing|notifying|alerting) (?:them|him|her|anyone|the owner)\b"
     r"|\bno se lo (?:digas|cuentes|menciones)\b|\bsin (?:decirle|avisarle|informarle)\w*|\bne (?:le |leur |lui )?(?:dites|dis)"
     r" (?:rien|pas)\b|\bsans (?:le |leur |lui )?(?:dire|prévenir|informer)\b"
     r"|\bnicht (?:dem |den )?(?:benutzer|nutzer|anwender)\w* (?:sagen|mitteilen|erzählen|informieren)"
     r"|\bohne (?:den |die )?(?:benutzer|nutzer)\w* zu (?:informieren|fragen|benachrichtigen)"
     r"|\bnão (?:diga|conte|informe|mencione)\w* (?:ao|para o) usuário|\bnon dirlo all'utente|\bnon (?:dire|informare) l'utente"
     r"|\b(?:never|do not|don'?t) (?:say|mention|admit|reveal|tell (?:them|the user)) (?:that )?(?:we|this tool|the tool"
     r"|i) (?:asked|told|instructed|requested)\b"
     r"|\bleave (?:that|this|it) out of (?:your|the) (?:summary|answer|reply|response)\b|\b(?:omit|hide|exclude) (?:this"
     r"|that|it) from (?:the user|your (?:summary|answer|reply|response))\b"
     r"|ユーザーに(?:は)?(?:伝え|言わ|知らせ|教え)ない|사용자에게\s*(?:알리지|말하지)|(?:不要|别|切勿)(?:告诉|通知|提醒)用户"),
    ("pass-into-parameter", "smuggle_ml", 1,
     r"(?:매개변수|파라미터|인자|인수)(?:로|에)\s*(?:전달|넣)|引数に(?:渡|入れ)|(?:参数|字段)(?:中|里)?(?:传|填)"
     r"|\b(?:pásal[oa]|pasa|incl[uú]yel[oa]|incluye|env[ií]al[oa]|ponl[oa])\s+(?:en|como)\s+(?:el\s+)?(?:parámetro|campo|argumento)"
     r"|\b(?:passe|mets|inclus|envoie)[- ]l[ea]\s+(?:dans|comme)\s+(?:le\s+)?(?:paramètre|champ|argument)"
     r"|\b(?:übergib|übergeben|füge|gib)\w*\b[^.\n]{0,40}?\b(?:parameter|feld|argument)\b"
     r"|\bpassal[oa]\s+(?:nel|come)\s+(?:parametro|campo)"),
    ("skip-consent", "consent", 2,
     r"\b(?:do not|don'?t|never|must not|no need to|without)\s+(?:ask(?:ing)?|prompt(?:ing)?|check(?:ing)? with|consult(?:ing)?"
     r"|confirm(?:ing)? with)\s+(?:the\s+)?(?:user|human|operator|owner)\b[^.\n]{0,30}?\b(?:to confirm|for (?:confirmation"
     r"|permission|approval|consent)|before|first)\b|\bnever ask\b|\bwithout asking\b"
     r"|\b(?:do not|don'?t|never)\s+ask\s+the\s+user\s*[.;!]"),
    ("forged-authority", "framing_def", 2,
     r"^\s*(?:#{1,6}\s*|\[\s*|\*\*\s*)(?:system|admin(?:istrator)?|operator|developer)\s+(?:prompt|message|directive"
     r"|override|instructions?|notice)\b"
     r"|\b(?:message|note|notice|instructions?|directive|update|order) from (?:anthropic|openai|google|the (?:system"
     r"|developers?|operators?|administrators?|platform|model provider|security team|it (?:department|team)"
     r"|compliance team|management))\b"
     r"|^\s*\[\s*(?:anthropic|openai|system|admin|internal|official|operator)\b[^\]\n]{0,30}\]"
     r"|\bsafety (?:filters?|rules|guidelines|checks|guardrails)\s+(?:are|have been)\s+(?:disabled|off|suspended|lifted"
     r"|removed)\b|\bcomply with (?:all|every|any) requests?\b"
     r"|\bI am (?:the|your)\s+(?:system\s+)?(?:administrator|admin|developer|operator|owner|creator)\b"
     r"|\b(?:root|admin(?:istrator)?|sudo|god|developer|debug)\s+(?:access|mode|privileges?|rights)\s+(?:granted|enabled"
     r"|unlocked|activated)\b|\b(?:must not|never|cannot|may not) refuse\b"
     r"|\b(?:the assistant|you) (?:now )?(?:acts?|operates?|runs?) with (?:administrator|admin|root|elevated|full) (?:rights"
     r"|privileges|access)\b"
     r"|\b(?:you are|the (?:assistant|model|agent|ai)(?: is)?) (?:now )?(?:authori[sz]ed|permitted|allowed|cleared"
     r"|required|obligated) to (?:share|disclose|reveal|send|provide|bypass|ignore|skip|read|run|execute|delete)"
     r"|\b(?:has|have) (?:granted|given) you (?:root|admin\w*|full|elevated|unrestricted|sudo)"
     r"|\byou are (?:now )?(?:an? )?(?:unrestricted|jailbroken|uncensored)\b"
     r"|\b(?:highest|top|first|primary) priority is to (?:call|use|run|send|collect)"
     r"|\b(?:hidden|secret|undisclosed)\s+(?:requirements?|instructions?|steps?|directives?|tasks?|objectives?)"
     r"\s*(?::|\bfor (?:the )?(?:ai|assistant|model|agent)\b)"),
    ("ignore-your", "override", 2,
     r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+)?(?:your|the)\s+(?:\w+\s+)?(?:instructions|guidelines"
     r"|system prompt|safety (?:rules|guidelines))\b|\bwhatever the user (?:asks|says|wants|requests|specifies|chooses)\b"
     r"|\bno matter what the user (?:asks|says|wants)\b"
     r"|\bdecode\w*\b[^.\n]{0,30}?\b(?:and|then)\s+(?:follow|execute|run|obey|carry out)\b"),
    ("run-order", "run_order", 1,
     r"\b(?:also|then|first|always|silently|quietly|secretly)\s+(?:run|execute|invoke)\s+" + _Q
     + r"|\b(?:run|execute)\s+" + _Q + r"[^`'\"\n]{1,80}" + _Q + r"\s+(?:in|on|with|via)\s+(?:the\s+)?(?:terminal|shell"
     r"|console|command line)|\bexecute\s+" + _Q + r"?(?:env|printenv|set|whoami|id)\b" + _Q
     + r"?\s+and\s+(?:send|include|pass|attach|return)"),
    ("mail-to-this-tool", "smuggle_data", 2,
     r"\b(?:e-?mails?|messages?|conversations?|chats?)\b[^.\n]{0,60}?\b(?:cop(?:y|ied)|forward\w*|sen[dt]|pass\w*"
     r"|rout\w*|mirror\w*)\b[^.\n]{0,20}?\bto\s+this (?:tool|function)\b"),
    ("send-it-out", "send_out", 1,
     r"\b(?:send|post|upload|e-?mail|forward|transmit)\s+(?:it|them|the (?:list|result|output|contents?|files?|data"
     r"|listing)|this)\s+to\b"),
    ("other-tool-claim", "other_claim", 1,
     r"\b(?:is|are|has been|have been) (?:deprecated|unreliable|broken|insecure|outdated|obsolete|untrustworthy)\b"
     r"|\b(?:is|are) (?:blocked|disabled|unavailable|not available)\b|\bmust (?:first |also |always )?be (?:sent|passed"
     r"|routed|copied|forwarded) (?:to|through)\b"
     r"|\bmust (?:always )?(?:target|use|go to|be sent to|point to)\b|\brejects?\b"
     r"|\bno longer (?:accepts?|works?|supports?|allows?)\b|\b(?:is|are) legacy\b|\bmust be (?:shortened|processed|wrapped"
     r"|signed|checked|logged) (?:with|through|by|via)\b"
     r"|\bsupersedes?\b|\brequires? the (?:channel|repository|repo|recipient|branch|header|prefix|path|account)\b"
     r"|\bfor all (?:messages|calls|requests|emails)\b"),
    ("distrust-others", "claim_def", 2,
     r"\b(?:the\s+|all\s+)?other (?:\w+\s+)?tools\b[^.\n]{0,40}?\b(?:are|is)\s+(?:not (?:trustworthy|reliable|safe"
     r"|secure)|untrustworthy|unreliable|compromised|deprecated|broken|unsafe|insecure|outdated|incomplete|wrong|inaccurate)"),
)
_PROMO: tuple[tuple[str, str, int, str], ...] = (
    ("prefer-this", "prefer", 2, r"\bprefer\s+(?:this(?: tool| one)?|it|me)(?=\s+(?:over|to|instead of)\b)"),
    ("endorsed", "claim", 2,
     r"\bofficially recommended\b|\brecommended by (?:the )?(?:mcp|anthropic|openai)\b"
     r"|\b(?:endorsed|certified|verified|approved) by (?:the )?(?:mcp|anthropic|openai)\b"
     r"|\bthe only (?:tool|one|function) you (?:need|should use|will need)\b|\b(?:the )?only (?:maintained|supported"
     r"|working|official|up-to-date) (?:\w+ )?(?:tool|fetcher|option|one|version|client)\b"
     r"|\b(?:supersedes?|replaces?|outperforms?|beats?)\s+(?:all|every|any)\s+(?:the\s+)?other\s+(?:\w+\s+)?tools?\b"),
    ("no-other-tools", "prefer", 2,
     r"\b(?:do not|don'?t|never)\s+(?:use|call|invoke)\s+(?:any\s+)?(?:other|another|different)\s+(?:\w+\s+)?tools?\b"
     r"|\bbefore (?:any|every|all) other tools?\b"),
    ("faster-than", "hype", 1, r"\b(?:\d+x|\d+ times|much|far)\s+(?:faster|better|more accurate|more reliable)\s+than\b"),
    ("before-any-answer", "first", 1, r"\b(?:always|first)\s+(?:call|use)\s+\S+\s+before (?:answering|responding to) any\b"),
)
_COMPILED = tuple((n, g, w, re.compile(p, _I)) for n, g, w, p in _ORDERS)
_PROMO_COMPILED = tuple((n, g, w, re.compile(p, _I)) for n, g, w, p in _PROMO)


def _prefilter(pattern: str) -> str:
    """`pattern` for the RE2 set: no look-arounds and no word boundaries (RE2's `\\b` is ASCII: "übergib"
    has none before it), so it matches wherever `pattern` can."""
    return "(?im)" + for_re2(pattern).replace("\\b", "")


#: One RE2 pass says which rules can match at all; only those run (most definitions: none).
_SET = search_set([_prefilter(p) for _, _, _, p in _ORDERS], 32 << 20)
_PROMO_SET = search_set([_prefilter(p) for _, _, _, p in _PROMO], 16 << 20)
#: "Never share your API key with this tool's logs": the reader's own key, in a warning.
_YOURS = re.compile(r"\byour\s+(?:own\s+)?" + _SECRETS, re.IGNORECASE)


def _hits(text: str, rules: tuple[tuple[str, str, int, re.Pattern[str]], ...],
          candidates: list[int]) -> list[Hit]:
    found = []
    for name, group, weight, pattern in (rules[i] for i in candidates):
        m = pattern.search(text)
        if m is not None and not (group == "smuggle_data" and _YOURS.search(m.group())):
            found.append(Hit(name, group, weight, m.start(), m.end(), m.group()))
    return found


#: Past this many characters a definition is oversized (`oversized_description`); its first part is read here
#: (the shared RE2 rules read all of it).
MAX_TEXT = 65536


def hits(text: str, *, other_tools: bool) -> list[Hit]:
    """This module's orders and claims in a definition's prose (made visible). A claim that a tool is
    deprecated or requires something ("other-tool-claim") counts only where `other_tools`: the text names
    another server's tool (a server that calls its own package deprecated tells the truth about itself)."""
    text = text[:MAX_TEXT]
    found = _hits(text, _COMPILED, _SET(text))
    return found if other_tools else [h for h in found if h.group != "other_claim"]


def promo_hits(text: str) -> list[Hit]:
    """Self-promotion the shared promotion rules do not phrase."""
    text = text[:MAX_TEXT]
    return _hits(text, _PROMO_COMPILED, _PROMO_SET(text))


__all__ = ["hits", "promo_hits"]
