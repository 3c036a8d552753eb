"""Word lists of the offline judge's stance and confidence rules (data, no logic beyond expanding
inflected forms). Written for this project; general English, not tied to any topic of the check
suite or the teaching corpus.

Kinds of words:
- evaluative words say good or bad by themselves ("beneficial", "dangerous", "a mistake");
- quantity words name something whose amount is good or bad ("injuries", "turnout"): on their own
  they weigh little, with a direction word ("fewer injuries", "turnout jumped") they decide;
- direction words say that an amount goes up or down ("rose", "fewer", "cut", "prevents");
- removal words say that the thing under debate is taken away ("ban", "abolish", "car-free");
- adoption words say that a policy was put in place ("introduced", "tried it").
"""

from __future__ import annotations

import re


def _forms(lemma: str) -> set[str]:
    """A lemma and its regular inflections (plural / 3rd person, past, gerund, comparative)."""
    out = {lemma}
    if " " in lemma or "-" in lemma:
        return out
    if lemma.endswith("y") and len(lemma) > 2 and lemma[-2] not in "aeiou":
        out |= {lemma[:-1] + "ies", lemma[:-1] + "ied", lemma + "ing"}
    elif lemma.endswith("e"):
        out |= {lemma + "s", lemma + "d", lemma[:-1] + "ing"}
    elif lemma.endswith(("s", "sh", "ch", "x", "z")):
        out |= {lemma + "es", lemma + "ed", lemma + "ing"}
    else:
        out |= {lemma + "s", lemma + "ed", lemma + "ing"}
        if len(lemma) <= 5 and re.search(r"(?:^|[^aeiou])[aeiou][bdgmnprt]$", lemma):  # stop -> stopped
            out |= {lemma + lemma[-1] + "ed", lemma + lemma[-1] + "ing"}
    return out


def _expand(spec: str) -> set[str]:
    """Space-separated lemmas; a trailing '!' keeps the word as written (no inflections)."""
    out: set[str] = set()
    for word in spec.split():
        out |= {word[:-1]} if word.endswith("!") else _forms(word)
    return out


def _weighted(groups: dict[float, str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for weight, spec in groups.items():
        for w in _expand(spec):
            out.setdefault(w, weight)
    return out


# ---- evaluative words: good or bad by themselves -------------------------------------------

POSITIVE = _weighted({
    1.0: """benefit beneficial advantage advantageous good! great! better! best! effective effectively!
         efficient safe! safer! safest! healthy! healthier! healthiest! clean! cleaner! cheaper! affordable
         afford improve improvement help helpful protect protection boost strengthen thrive success!
         successful! succeed win! valuable value worth! worthwhile! sensible! wise! wiser! fair! fairer!
         reliable! stable! stability! quieter! easier! convenient! sustainable! resilient! positive! gain!
         save flourish enhance enable empower representative! accessible! popular! worked! works!
         advance! progress! relief! relieve beat outperform cost-effective! low-carbon! carbon-free!
         harmless! vital! essential! necessary! welcome! smart! overdue! justified! promising!
         encourage useful! supported! supports! supporting! recover""",
    0.5: """favour favor recommend praise opportunity! important! appeal! attractive! enjoy freedom!
         educate education! conservation! calmer! tidier! cooler! lift""",
})
NEGATIVE = _weighted({
    1.0: """harm harmful damage damaging danger! dangerous! risky! problem problematic! negative! bad!
         worse! worst! costly! expensive! unfair! unsafe! unhealthy! toxic! addictive! addiction! cruel!
         cruelty! unethical! wrong! mistake waste wasteful! fail failure ineffective! useless! pointless!
         threat threaten hurt suffer burden drawback disadvantage downside concern worrying! worried!
         clash undermine erode violate exclude isolate struggle backfire harder! difficult! slower!
         inconvenient! careless! unreliable! unstable! inferior! disrupt disruption! overrated! clog
         alone! lonely! lonelier! isolated! excessive! exploit exploitation! abuse misuse victim!
         painful! weaker! weaken complain complaint! penalise penalize punish! insufficient!
         inadequate! flaw flawed! detrimental! unaffordable! unjust! illegal! lose loss lost! deter!
         deprive rob unpredictable! severe! dump injure frustrate soggy! irritable! irritability!
         take-away!""",
    0.5: """worry fear criticism! controversial! doubt limitation! hard! skeptical! sceptical!
         inconvenience! annoy""",
})

# ---- quantity words: an amount that is good (+1) or bad (-1) to have more of ----------------

GOOD_AMOUNTS = _expand(
    """turnout participation attendance customer sales! revenue income earnings! wage job employment
    productivity output! sleep slept! health wellbeing well-being! happiness! saving access visitor
    safety! lifespan life! lives! expectancy score grade learning achievement biodiversity yield
    efficiency trust cycling walking exercise activity! activities! supply housing! investment
    growth! innovation donation competition choice diversity quality! security! mobility! footfall
    retention! morale! satisfaction! literacy! skill profit staff worker employee funding! fund
    chance opportunity friend friendship earn earnings!"""
)
BAD_AMOUNTS = _expand(
    """pollution pollutant emission dioxide smog injury death fatality collision crash accident crime
    arrest cost price rent debt waste litter obesity stress burnout anxiety depression symptom
    disease illness risk attack cholesterol! pressure! gap inequality poverty unemployment error
    invalid! blank! noise congestion argument bullying addiction absence delays! poisoning psychosis!
    emergency! emergencies! deficit fraud corruption! inflation! violence! abuse harm damage overdose
    suicide homelessness! infection cancer stroke mortality! dropout complaint carbon! co2! methane!
    deforestation! extinction! flooding! drought shortage poaching! smoking! toxin waiting! queue
    eviction displacement! chemical headache trouble war conflict sugar sugary! snack junk! calorie alcohol! landfill toll"""
)
# Nouns of effect: with a negation ("little link", "no effect") they say "X does not work"; alone
# they say nothing about good or bad.
EFFECT_WORDS = _expand("link effect impact difference evidence association improvement change! sign! proof!")

# ---- direction words ------------------------------------------------------------------------

UP_WORDS = _expand(
    """more! higher! increase rise rose! risen! raise grow grew! grown! jump double! doubled! doubling!
    triple! tripled! gain boost widen add surge soar expand extra! up! spike climb greater! larger!
    bigger! multiply accelerate heighten worsen amplify longer!"""
)
DOWN_WORDS = _expand(
    """fewer! less! lower! reduce reduction! decrease fall! falls! fell! fallen! falling! drop decline cut
    cuts! cutting! narrow shrink shrank! halve halved! down! eliminate prevent avoid fight combat
    tackle ease slash lessen minimise minimize protect shield limit smaller! shorter! rob! robs!
    robbed! deprive spare lose lost! loss short-of! lack-of! lacking! short-on!"""
)
# these take their amount after "of" ("robs children of sleep")
OF_OBJECT_WORDS = frozenset("rob robs robbed robbing deprive deprives deprived depriving".split())
# "cost" is a direction only when what it costs is good to have ("costs people sleep", "cost jobs")
COST_WORDS = frozenset("cost costs costing".split())
MONEY_WORDS = frozenset("dollars euros pounds billion billions million millions money taxpayers' fortune".split())
# words after which "of" does not end the amount ("40 minutes of sleep")
UNIT_WORDS = frozenset("""minutes minute hours hour days day weeks years percent per cent share number
amount lot lots level levels rate rates thousands millions billions""".split())
# multi-word directions written as one token before reading ("short of sleep" -> "short-of sleep")
JOINED_PHRASES = (("short of", "short-of"), ("lack of", "lack-of"), ("short on", "short-on"))
# "leading cause of", "most common kind of": make the following amount count as large
LARGE_AMOUNT_RE = re.compile(r"\b(?:leading|major|main|biggest|largest|chief|primary|common|frequent)\s+"
                             r"(?:source|sources|cause|causes|driver|drivers|contributor|kinds?|types?|forms?)\s+of\b")

# ---- negation ---------------------------------------------------------------------------------

NEGATORS = frozenset("""not no never none nobody nothing neither nor cannot can't won't don't doesn't
didn't isn't aren't wasn't weren't shouldn't wouldn't couldn't hardly barely scarcely without""".split())
# "little" negates only these: "little link", "little evidence", "little or no effect"
LITTLE_NEGATES = frozenset("link links effect effects evidence impact difference benefit benefits or change".split())
NOT_NEGATION_RE = re.compile(r"\b(?:no longer|not only|no more than|not more than|no less than|no doubt|"
                             r"nothing but|never before)\b")

# ---- removal and adoption of the thing under debate -------------------------------------------

REMOVAL_VERBS = _expand(
    """ban abolish prohibit outlaw stop end eliminate scrap close remove drop phase! ditch axe cancel
    forbid restrict bar! criminalise criminalize quit delay postpone replace""")
REMOVAL_NOUNS = frozenset("""ban bans abolition prohibition closure closures removal phase-out moratorium
restriction restrictions""".split())
REMOVAL_PHRASE_RE = re.compile(r"\b(?:without (?:it|them|one)|get(?:ting)? rid of|"
                               r"giv(?:e|es|en|ing) (?:it |them |this )?up|gave (?:it |them )?up|phas(?:e|es|ed|ing) out|"
                               r"do(?:ing)? away with|no longer|cut(?:ting)? out|once [a-z]+ (?:were|was|are|is) gone)\b")
# opposites: a statement naming the opposite of the topic speaks of the alternative to it
_OPPOSITE_PAIRS = ("early later", "earlier later", "late early", "voluntary compulsory", "optional mandatory",
                   "private public", "paid free", "illegal legal", "part-time full-time", "shorter longer",
                   "longer shorter", "lower higher", "higher lower", "fewer more", "smaller larger")
ANTONYMS: dict[str, tuple[str, ...]] = {}
for _pair in _OPPOSITE_PAIRS:
    _a, _b = _pair.split()
    ANTONYMS[_a] = (*ANTONYMS.get(_a, ()), _b)
ADOPTION_VERBS = _expand("adopt introduce implement try tried! enact pass legalise legalize allow install build")
ADOPTION_OBJECTS = frozenset("it this them these the policy law rule scheme measure reform system".split())

# ---- query: what the question asks about -----------------------------------------------------

QUERY_NEGATIVE_PREDICATES = _expand(
    """bad harmful dangerous unsafe unhealthy risky toxic addictive cruel unethical wrong overrated
    worse harm damage hurt illegal unfair waste pointless useless ineffective problematic""")
QUERY_REMOVAL = REMOVAL_VERBS | REMOVAL_NOUNS | _expand("illegal! banned! abolished! closed!")

# ---- balance and verdicts ------------------------------------------------------------------------

BALANCE_RE = re.compile(
    r"\b(?:depends? on|depending on|works? best (?:when|if|with|alongside)|middle (?:path|ground|way)|"
    r"compromise|trade-?offs?|both sides|pros and cons|weighs? (?:these|the|its)? ?\w* ?against|"
    r"it is up to|it's up to|on the one hand|mixed (?:results|evidence|picture)|"
    r"in some cases .{0,80} in others|whether it (?:helps|works) depends)\b")
VERDICT_PHRASES: tuple[tuple[re.Pattern[str], float], ...] = tuple(
    (re.compile(p), w) for p, w in (
        (r"\b(?:the )?right (?:move|choice|call|decision|policy|thing to do|approach)\b", 2.0),
        (r"\b(?:clearly|simply|by far|easily) the best\b", 2.0),
        (r"\bthe best (?:solution|option|choice|way|tool|answer)\b", 2.0),
        (r"\b(?:a|an) (?:good|great|smart|sensible|wise|excellent) (?:idea|move|choice|policy|investment|step)\b", 2.0),
        (r"\b(?:an? )?(?:easy|clear|big|real) win\b", 2.0),
        (r"\bno-?brainer\b", 2.0),
        (r"\bmakes? (?:good )?sense\b", 1.5),
        (r"\bworth (?:it|the (?:cost|effort|money|price|risk))\b", 2.0),
        (r"\bbenefits? (?:clearly |far )?outweighs? (?:the |its )?(?:costs?|risks?|drawbacks?|harms?|downsides?)\b", 2.0),
        (r"\b(?:costs?|risks?|drawbacks?|harms?|downsides?) (?:clearly |far )?outweighs? (?:the |its )?benefits?\b", -2.0),
        (r"\bmore harm than good\b", -2.0),
        (r"\bmore good than harm\b", 2.0),
        (r"\b(?:a|an) (?:bad|terrible|poor|dangerous) (?:idea|move|choice|policy|investment)\b", -2.0),
        (r"\btoo (?:risky|expensive|costly|dangerous|slow|harsh|extreme|blunt)\b", -2.0),
        (r"\bwaste of (?:money|time|resources)\b", -2.0),
        (r"\bthe only (?:fair|sensible|responsible|reasonable|right|evidence-based)\b", 2.0),
        (r"\bcase for [\w\s-]{0,40} is (?:strong|compelling|clear|overwhelming)\b", 2.0),
        (r"\bcase for [\w\s-]{0,40} is (?:weak|thin|unconvincing)\b", -2.0),
        (r"\bno (?:real |good |clear )?(?:benefit|advantage|reason|case)\b", -1.5),
        (r"\b(?:a )?(?:poor|bad|wasteful) use of\b", -2.0),
        (r"\babove (?:the )?average\b", 1.0),
        (r"\bbelow (?:the )?average\b", -1.0),
    )
)
MODALS = frozenset("should must ought need needs".split())

# ---- reported views: who says it --------------------------------------------------------------

AGAINST_GROUPS = frozenset("critics opponents detractors sceptics skeptics".split())
FOR_GROUPS = frozenset("supporters proponents advocates defenders backers champions fans".split())
# groups whose side is known even when the sentence does not say what they are for or against
ROLE_GROUPS = frozenset("critics opponents detractors supporters proponents".split())
REPORT_VERBS = _expand("""argue say said! claim contend point note warn worry fear insist maintain believe
                       suggest stress counter object complain""")

# ---- confidence ------------------------------------------------------------------------------------

HEDGES: dict[str, float] = {
    "may": 1.0, "might": 1.0, "could": 0.7, "possibly": 1.0, "perhaps": 1.0, "maybe": 1.0, "likely": 0.5,
    "unlikely": 0.7, "probably": 0.8, "suggests": 0.6, "suggest": 0.6, "appears": 0.7, "appear": 0.7,
    "seems": 0.8, "seem": 0.8, "uncertain": 1.5, "unclear": 1.5, "debated": 1.0, "debatable": 1.0,
    "potentially": 1.0, "arguably": 1.0, "depends": 0.8, "varies": 0.5, "vary": 0.5, "not sure": 2.0,
    "not clear": 1.5, "less clear": 1.0, "difficult to say": 2.0, "hard to say": 2.0, "no definitive": 1.5,
    "no consensus": 1.5, "it is possible": 1.0, "it's possible": 1.0, "i think": 0.8, "i believe": 0.6,
    "generally": 0.3, "tend to": 0.4, "tends to": 0.4, "mixed": 0.8, "don't know": 2.0, "do not know": 2.0,
    "nobody really knows": 2.0, "no one knows": 2.0, "not known": 1.5, "unknown": 1.0, "could not find": 1.5,
    "couldn't find": 1.5, "can't confirm": 1.5, "cannot confirm": 1.5, "somewhat": 0.5, "slightly": 0.3,
    "divided": 1.0, "to some extent": 0.8, "in some cases": 0.4, "not certain": 1.5, "remains to be seen": 1.5,
}
BOOSTERS: dict[str, float] = {
    "clearly": 1.2, "certainly": 1.2, "definitely": 1.5, "undoubtedly": 1.8, "always": 1.0, "never": 0.8,
    "must": 0.8, "proven": 1.2, "proves": 1.2, "obviously": 1.5, "without doubt": 1.8, "without a doubt": 1.8,
    "no doubt": 1.5, "absolutely": 1.5, "of course": 0.8, "strongly": 0.6, "it is clear": 1.5,
    "undeniably": 1.8, "guaranteed": 1.5, "completely": 0.8, "conclusive": 1.5, "overwhelming": 1.2,
    "every": 0.4, "only": 0.3, "the best": 0.8, "simply": 0.6, "debunked": 1.2, "immediately": 0.5,
    "everywhere": 0.6, "anyone who": 0.8, "consistent": 0.5, "study after study": 1.2, "there is no doubt": 1.8,
}

# ---- phrases read by the stance rules ----------------------------------------------------------

CAUSAL_RE = re.compile(r"\b(?:cause[sd]?|causing|lead(?:s|ing)? to|led to|linked (?:to|with)|link(?:s|ed)? (?:it |them )?to|"
                       r"trigger(?:s|ed)?|result(?:s|ed)? in|contribut(?:e|es|ed) to|associated with|"
                       r"expos(?:e|es|ed|ing) (?:\w+ ){0,3}to|brings?|brought|creat(?:e|es|ed)|emit(?:s|ted)?|releas(?:e|es|ed)|"
                       r"produc(?:e|es|ed)|generat(?:e|es|ed)|pump(?:s|ed)? out|ends? up in|end(?:ed|ing) up in)\b")
EFFECT_NOUNS = r"(?:effects?|impacts?|differences?|links?|benefits?|savings?|gains?|improvements?)"
WEAK_EFFECT_RE = re.compile(
    rf"\b{EFFECT_NOUNS}\s+(?:\w+\s+){{0,3}}?(?:(?:are|is|were|was|seem|seems|appear|appears|remain|remains|look|"
    r"looks)\s+)?(?:\w+\s+)?(?:tiny|small|negligible|minimal|modest|marginal|weak|slight|zero|nil)\b"
    rf"|\b(?:only\s+)?(?:a\s+)?(?:tiny|small|negligible|minimal|modest|marginal|limited|weak|slight)\s+{EFFECT_NOUNS}"
    rf"|\b{EFFECT_NOUNS}\s+(?:\w+\s+){{0,3}}?(?:fades?|faded|fading|wanes?|waned|wears? off|disappears?|"
    r"disappeared|vanish(?:es|ed)?)\b"
    r"|\b(?:exaggerated|overstated|overblown|inflated|overestimated)\b"
    r"|\b(?:only\s+)?(?:a\s+)?(?:tiny|small|negligible|minor)\s+(?:share|fraction|part|proportion)\b")
EFFECT_NEGATORS = frozenset({"little", "small", "tiny", "negligible", "minimal", "modest", "limited", "weak", "slight"})
EPISTEMIC_NEGATION_RE = re.compile(
    r"\b(?:cannot|can't|can not|could not|couldn't|does not|doesn't|do not|don't|did not|didn't|not|no one has)\s+"
    r"(?:yet\s+)?(?:show|shown|prove|proven|mean|demonstrate|establish|imply)\s+that\b"
    r"|\b(?:no|little|scant|limited|weak|not much)\s+(?:\w+\s+){0,2}?(?:evidence|proof|sign|signs|data)\s+(?:yet\s+|so far\s+)?that\b")
WORK_VERB_RE = re.compile(r"\b(?:does|do|did|will|would|can|could|may|might|really|actually|they|it|this|that|which)\s+"
                          r"(?:not\s+)?work(?:s|ed)?\b|\b(?:doesn't|don't|didn't|won't|wouldn't|can't|cannot)\s+work\b")
EXTRA_PHRASES: tuple[tuple[re.Pattern[str], float], ...] = tuple(
    (re.compile(p), w) for p, w in (
        (r"\bout of poverty\b", 1.5),
        (r"\bfree(?:s|d)? up\b", 1.0),
        (r"\bpays? off\b", 1.5),
        (r"\btops?(?:ped)? (?:the |every |all |most )?(?:\w+ )?(?:rankings?|league tables?|charts?)\b", 1.5),
        (r"\bback from (?:the )?(?:brink|near extinction|extinction)\b", 1.5),
        (r"\bmeets? (?:the |their |its )?needs\b", 1.0),
        (r"\bleft out\b", -1.0),
        (r"\btak(?:e|es|ing|en) away\b", -1.0),
        (r"\bhard(?:er)? to (?!tell|say|know|judge|predict|measure|estimate|prove|separate|compare)\w+", -1.0),
        (r"\beasier to\b", 1.0),
        (r"\bless harmful\b", 1.0),
        (r"\bmore (?:harmful|dangerous|risky)\b", -1.0),
    )
)
