"""Quoted, not spoken: an injection string that a text mentions rather than addresses to the model.

A security article, a changelog or a scanner's documentation quotes attack
strings to explain them: 'attackers hide phrases such as "ignore previous
instructions" in tool descriptions'. The model reads that sentence as a
report about an attack, not as an order. What separates the two is who
speaks: a quoted span introduced as an example ("such as", "e.g.", "the
phrase", "known as") in a text that is about attacks is a mention. This
module blanks such spans (same length, so offsets into the text stay
valid) for a second reading; `_poisoning_rules.hits` uses it only when the
first reading already found enough to flag, so ordinary text pays nothing.

Only quotes count, and only with both signals: a cue word right before the
quote and a topic word (prompt injection, attack, malicious...) somewhere in
the text. An unquoted order, or a quoted one in text that is not about
attacks, is read as it stands. The one unquoted mention is reported speech
about the model in a text about attacks ("a description instructing the
model to read ~/.ssh/id_rsa"): the rest of that sentence is blanked.
"""

from __future__ import annotations

import re

import re2

_OPTIONS = re2.Options()
_OPTIONS.max_mem = 16 << 20
#: The text talks about attacks (re2: linear time on a result of any size).
_TOPIC = re2.compile(r"(?i)\b(?:prompt[- ]injections?|injection (?:attacks?|strings?|payloads?|attempts?)|jailbreak\w*"
                     r"|attack(?:s|ers?|ed)?|adversar\w+|malicious|exploit\w*|poison\w*|red[- ]team\w*|phishing"
                     r"|payloads?|threat (?:actors?|models?))\b", _OPTIONS)
_OPEN_CLOSE = {'"': '"', "'": "'", "`": "`", "\u201c": "\u201d", "\u2018": "\u2019", "\u00ab": "\u00bb"}
#: An example is introduced: a cue, then (within a few words) the opening quote.
_MENTION = re.compile(
    r"\b(?:such as|like|e\.g\.|eg\.|i\.e\.|for example|for instance|including|the (?:phrase|string|text|words?"
    r"|sentence|payload|prompt|message|instruction)s?|(?:phrases?|strings?|payloads?|texts?|words|sentences|prompts?"
    r"|messages?|commands?|instructions?|inputs?) (?:like|such as|as|containing|that say|saying|reading)"
    r"|known as|called|dubbed|labell?ed|saying|said|says|wrote|writes|reads?|quoted?|quoting|containing|contains"
    r"|as in|(?:might|could|would|can|may|to|will|often|then) (?:write|type|insert|embed|hide|plant|inject|use|put|add)"
    # code that holds the string: `payload = '...'`, `scan("...")` (a test, a fixture)
    r"|[\w\]]+\s*(?:=|:=|\+=|\()"
    r"|(?:tells?|told|telling|instructs?|instructing|asks?|asking) (?:the )?(?:model|agent|llm|ai|assistant|chatbot)s?)"
    r"[\s:,(]{0,4}"
    r"(?:(?:a|an|the|something)\s+)?(?P<q>[\"'`\u201c\u2018\u00ab])", re.IGNORECASE)
#: A headline in a list of results or articles ("2. 'Ignore previous instructions': the attack explained"): the
#: quote opens a list item, as titles are quoted.
_HEADLINE = re.compile(r"(?m)^[ \t]*(?:\d{1,3}[.)]|[-*\u2022])[ \t]*(?P<q>[\"'`\u201c\u2018\u00ab])")
_MAX_QUOTE = 400
#: Reported, not spoken: "a description instructing the model to read ~/.ssh/id_rsa", "can trick the agent into
#: running ...": what an attack makes the model do, told in the third person (an advisory, a paper). The rest of the
#: sentence is blanked; an order addresses the model ("you", the imperative), it does not report on it.
_REPORTED = re.compile(
    r"\b(?:instruct|tell|ask|direct|cause|make|trick|force|lead|coax|get|convince|manipulate|persuade|induce|steer)"
    r"(?:s|ed|ing)?\s+(?:the |an? |any |many |most )?(?:ai |llm |coding |victim'?s? )?(?:models?|agents?|llms?|ai"
    r"|assistants?|chatbots?)\s+(?:to|into)\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|\n")


def about_attacks(text: str) -> bool:
    """Whether `text` talks about attacks at all (the first of the two signals)."""
    return _TOPIC.search(text) is not None


def blank_mentions(text: str) -> str:
    """`text` with each quoted example blanked (spaces, same length); `text` itself when none."""
    if not about_attacks(text):
        return text
    out = list(text)
    changed = False
    for m in _REPORTED.finditer(text):
        stop = _SENTENCE_END.search(text, m.end(), m.end() + _MAX_QUOTE)
        for i in range(m.end(), stop.start() if stop else min(len(text), m.end() + _MAX_QUOTE)):
            out[i] = " "
        changed = True
    for m in (*_MENTION.finditer(text), *_HEADLINE.finditer(text)):
        close = _OPEN_CLOSE[m.group("q")]
        start = m.end()
        end = text.find(close, start, start + _MAX_QUOTE)
        if end <= start:
            continue
        for i in range(start, end):
            if out[i] != "\n":
                out[i] = " "
        changed = True
    return "".join(out) if changed else text


__all__ = ["about_attacks", "blank_mentions"]
