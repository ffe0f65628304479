"""Declared harm read as concepts that meet in one sentence, whatever words and order carry them.

`_poisoning_capability`'s rules are phrases: a verb, then an object, then a place, in that order and
within so many characters. A red team that writes each harm in new words ("attaches ~/.aws/credentials
to the crash report sent to our servers", "transmits the full text to an analytics partner", "Тайно
отправляет пароли ... на удалённый сервер") passes between them. Here a sentence is read for concepts
instead, and a harm is a meeting of them in one sentence:

- exfiltration: something private (a secret, or the user's files, mail, messages, recordings, the
  environment) *and* sending *and* a place that is not the user's (our servers, a partner, a remote
  or foreign server, a URL, an address); or private, sending and secrecy ("secretly", "stiekem");
- credential harvesting: a secret *and* disclosure (revealed, in plain text, unmasked) *and* all of
  them ("every item ... with the passwords revealed"); or a copied sign-in page that keeps what is
  typed;
- destruction: wiping *and* everything *and* something of value (the mailbox, the home folder, the
  boot sector, every namespace, the logs), with nothing in the sentence that scopes it to junk (the
  spam folder, the cache, stopped containers, "the given namespace").

Context is the capability module's: a sentence that detects, prevents, warns or negates is skipped.
"""

from __future__ import annotations

import re

from mcpwall.security._poisoning_chars import visible_text

_I = re.IGNORECASE


def _c(pattern: str) -> re.Pattern[str]:
    """`pattern` as the text it runs on reads: made visible, Cyrillic look-alike letters folded to Latin."""
    return re.compile(visible_text(pattern), _I)


_SECRET = _c(
    r"\b(?:passwords?|passphrases?|credentials?|private[ -]?keys?|secret (?:gpg |pgp |ssh )?keys?|api[ _-]?keys?"
    r"|(?:refresh|access|session|auth|oauth|bearer) tokens?|tokens|cookies|seed phrases?|recovery phrases?|mnemonics?"
    r"|card numbers?|one-time codes?|otp codes?|2fa codes?|keyrings?|keychains?|password hashes|ntlm hashes)\b"
    r"|~/\.(?:ssh|aws|gnupg|kube|docker)\b|\bid_(?:rsa|ed25519|ecdsa)\b(?!\.pub)|\.env\b|\.netrc\b|\.git-credentials\b"
    r"|\b(?:hasła|hasło|klucze prywatne|klucz prywatny|şifreler\w*|özel anahtar\w*)\b"
    r"|\b(?:wachtwoorden|privésleutels|contraseñas|claves privadas|mots de passe|clés privées|passw(?:ö|oe)rter"
    r"|private schlüssel|senhas|chaves privadas|chiavi private)\b|парол\w*|закрыт\w* ключ\w*|密码|私钥|パスワード|秘密鍵")
_PRIVATE = re.compile(
    r"\b(?:(?:the\s+)?user'?s'?|your|their)\s+(?:\w+\s+){0,2}?(?:files?|documents?|messages?|e-?mails?|inbox|mailbox"
    r"|notes?|photos?|contacts?|history|conversations?|chats?|recordings?|calls?|keystrokes|screens?|location"
    r"|address books?|bookmarks|calendars?)\b"
    r"|\b(?:whole|entire|full|complete)\s+(?:repositor(?:y|ies)|repo|codebase|project|disk|home folder|mailbox|inbox"
    r"|address book)\b|\baddress books?\b"
    r"|\b(?:which|what|the)\s+(?:apps?|sites?|websites?|pages?|urls?|files?)\s+(?:the user|you)\s+(?:opens?|visits?"
    r"|uses?|reads?)\b|\busage (?:data|reports?|habits)\b"
    r"|\b(?:every|each|all)\s+(?:\w+\s+){0,2}?(?:files?|documents?|messages?|e-?mails?|notes?|photos?|recordings?"
    r"|(?:phone )?calls?|commits?|commit diffs?|keystrokes|screenshots?|urls? visited)\b"
    r"|\b(?:message bod(?:y|ies)|full text|process environment|environment variables|browsing history"
    r"|clipboard|webcam|microphone|camera|screen recordings?|commit diffs?|source code)\b", _I)
_SEND = _c(
    r"\b(?:send|sent|sends|sending|transmit\w*|upload\w*|post(?:s|ed|ing)?|deliver\w*|forward\w*|attach\w*|ship\w*"
    r"|sync\w*|mirror\w*|stream\w*|relay\w*|export\w*|cop(?:y|ies|ied)|e-?mail\w*|leak\w*|stor(?:e|es|ed|ing) (?:them |it )?"
    r"(?:on|at)|stor\w* (?:\w+\s+){0,2}?(?:on|at)|keeps? (?:a )?cop(?:y|ies)|sell\w*|monetis\w*|monetiz\w*)\b"
    r"|\b(?:wysyła|przesyła|gönderir)\b"
    r"|\b(?:stuurt|verstuurt|envoie|envía|envia|invia|sendet|übermittelt|überträgt)\b|отправля\w*|передаё\w*|上传|发送|送信")
_AWAY = _c(
    r"\b(?:our|the vendor'?s?|the developer'?s?|the author'?s?|the publisher'?s?|the operator'?s?)\s+(?:\w+\s+)?"
    r"(?:servers?|cloud|api|backend|site|endpoint|service|team|account|bucket|storage)\b"
    r"|\b(?:advertisers|marketers|data brokers)\b"
    r"|\b(?:(?:an?|the)\s+)?(?:analytics |marketing |advertising |data )?(?:partners?|third[- ]part(?:y|ies)|data brokers?)\b"
    r"|\b(?:remote|external|foreign|outside|offshore|unknown)\s+(?:\w+\s+)?(?:servers?|hosts?|address(?:es)?|numbers?"
    r"|services?|sites?|endpoints?|parties)\b|\b(?:server|servers|host) abroad\b"
    r"|https?://|\b[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,6}\b"
    r"|\b(?:[a-z0-9-]{1,63}\.){1,6}(?:com|net|org|io|xyz|ru|cn|top|site|dev|app|cloud)\b"
    r"|\b(?:externe|entfernte\w*) server\b|\bserveur (?:distant|externe)\b|\bservidor (?:externo|remoto)\b"
    r"|\bserver (?:esterno|remoto)\b|\b(?:zewnętrzny|zdalny) serwer\b|\buzak sunucu\w*|удалённ\w* сервер\w*|удаленн\w* сервер\w*|внешн\w* сервер\w*|远程服务器|外部服务器")
_COVERT = _c(
    r"\b(?:secretly|silently|quietly|covertly|surreptitiously|stealthily|discreetly|without (?:telling|asking|notifying"
    r"|informing)|without the user'?s? knowledge|not shown|hidden from)\b"
    r"|\b(?:potajemnie|po cichu|gizlice|stiekem|heimlich|en secreto|secretamente|segretamente|discrètement|en cachette)\b|тайно|скрытно|秘密|偷偷")
#: "the key is also posted to our API": a secret the text named before.
_REFERENT = re.compile(r"\b(?:the|this|that|its) (?:key|phrase|seed|password|token|secret|passphrase)s?\b", _I)
_EXPORT = re.compile(r"\b(?:export|dump|extract|harvest|collect|exfiltrat)\w*\b", _I)
#: Secrets of other programs, or everything a store holds.
_OTHERS = re.compile(r"\b(?:stored|saved|cached|kept) (?:by|in)\b", _I)
_REVEAL = re.compile(r"\b(?:revealed|unmasked|in (?:plain|clear) ?text|decrypted|in the clear)\b", _I)
_ALL = re.compile(r"\b(?:every|all|each|entire|whole|everything)\b|/\*|\b(?:are|is) gone\b|\bno trace\b", _I)
_WIPE = re.compile(
    r"\b(?:delet\w*|permanently remov\w*|wip\w*|eras\w*|overwrit\w*|destroy\w*|empt(?:y|ies|ying)|truncat\w*|purg\w*|format\w*|zero(?:es|s)?"
    r"|unreadable|brick\w*|shred\w*)\b", _I)
_VALUABLE = re.compile(
    r"\b(?:mailbox|inbox|home (?:folder|director(?:y|ies))|boot sectors?|master boot record|mbr|disks?|drives?"
    r"|partitions?|namespaces|clusters?|persistent volumes?|backups?|snapshots?|journal|/var/log\S*|logs|repositor(?:y|ies)"
    r"|databases?|buckets|documents|photos|(?:the user'?s|your) files)\b", _I)
#: What makes a wipe of "all" a clean-up: junk, or a scope the caller gives.
_SCOPED = re.compile(
    r"\b(?:spam|trash|junk|cache[sd]?|cached|temp(?:orary)?|tmp|stopped|unused|dangling|dust|old|stale|merged|expired"
    r"|given|specified|selected|chosen|matching|(?:that|which) match|you (?:choose|select|give|name)|older than|only|if (?:true|set|enabled)"
    r"|when (?:true|set|enabled))\b", _I)
_PHISH = re.compile(r"\b(?:copy|clone|replica|imitation|fake|look-?alike)\s+of\s+(?:the\s+)?(?:\S+\s+){0,3}?"
                    r"(?:sign[- ]on|sign[- ]in|login|log-in|bank\w*)\s+(?:page|portal|form|screen|site)\b", _I)
_KEEPS = re.compile(r"\b(?:sav|stor|keep|record|log|captur|send|forward)\w*\s+(?:the\s+)?(?:entered|typed|submitted)\b"
                    r"|\b(?:sav|stor|keep|record|captur)\w*\s+(?:\w+\s+){0,4}?(?:passwords?|credentials)\b", _I)
_DEFENCE = re.compile(
    r"\b(?:detect\w*|scan\w*|check\w*|flag\w*|prevent\w*|protect\w*|block\w*|alert\w*|warn\w*|audit\w*|hunt\w*"
    r"|never|not|no|don'?t|doesn'?t|won'?t|cannot|only (?:with|when|if)|unless|redact\w*|mask\w*|without (?:sending|uploading))\b", _I)
_SENTENCE = re.compile(r"[^.!?\n;。]+(?:\.(?=\S)[^.!?\n;。]*)*")


#: Harms read here and their severity: a wipe of everything valuable is the softer claim ("Deletes all the
#: user's files" warns; what is taken and sent away is blocked).
SEVERITY = {"exfiltration": "high", "credential_harvesting": "high", "destruction": "medium"}
#: The first part of a definition read (past 16 KiB it is oversized anyway).
MAX_TEXT = 65536


def concepts(text: str) -> list[tuple[str, str]]:
    """(harm, sentence) for each harm whose concepts meet in one sentence of `text`."""
    text = text[:MAX_TEXT]
    found: dict[str, str] = {}
    # each harm needs its verb somewhere: most definitions have none and are not read by sentence
    send, wipe, phish = _SEND.search(text), _WIPE.search(text), _PHISH.search(text)
    reveal = _REVEAL.search(text) or _EXPORT.search(text)
    if not (send or wipe or phish or reveal):
        return []
    named_secret = bool(_SECRET.search(text))
    for m in _SENTENCE.finditer(text):
        sentence = m.group().strip()
        sends = send and _SEND.search(sentence)
        wipes = wipe and _WIPE.search(sentence)
        reveals = reveal and (_REVEAL.search(sentence) or _EXPORT.search(sentence))
        phishes = phish and _PHISH.search(sentence)
        if not (sends or wipes or reveals or phishes) or len(sentence) < 12 or _DEFENCE.search(sentence):
            continue
        secret = _SECRET.search(sentence) or (named_secret and _REFERENT.search(sentence))
        if sends and (secret or _PRIVATE.search(sentence)) and (_AWAY.search(sentence) or _COVERT.search(sentence)):
            found.setdefault("exfiltration", sentence)
        if reveals and secret and ((_REVEAL.search(sentence) and (_ALL.search(sentence) or _OTHERS.search(sentence)))
                                   or (_EXPORT.search(sentence) and _ALL.search(sentence))):
            found.setdefault("credential_harvesting", sentence)
        if phishes and _KEEPS.search(sentence):
            found.setdefault("credential_harvesting", sentence)
        if wipes and _ALL.search(sentence) and _VALUABLE.search(sentence) and not _SCOPED.search(sentence):
            found.setdefault("destruction", sentence)
    return sorted(found.items())


__all__ = ["SEVERITY", "concepts"]
