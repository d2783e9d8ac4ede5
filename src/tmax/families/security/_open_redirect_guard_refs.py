"""Reference-program texts of open_redirect_guard's `canonical` and `request_guard` variants: Python
functions and C functions inserted into the guard's programs before their main(), and the calls in
main() they swap in (the guard's own texts stay as they are)."""

# The other variants' per-item answers, built on safe() (inserted before main(), whose three calls they swap).
EXTRA = {"canonical": r'''
def canon(raw, hosts=None):
    """The Location the fixed service sends: a safe target in canonical form, anything else as /."""
    if not safe(raw, hosts):
        return "/"
    text = decode(raw).decode("ascii")
    if text.startswith("/"):
        return text
    authority, rest = ABS.match(text).groups()
    return "https://" + authority.partition(":")[0].lower() + rest


def v_classify(raw):  # strict: only safe targets that need no rewriting
    return canon(raw) == raw


def v_line(raw):
    return canon(raw)


def v_audit(text, hosts):
    out = []
    for n, _, target in requests(text, hosts):
        value = next_of(target)
        if value is not None and canon(value, hosts) != value:
            out.append(f"{n} {canon(value, hosts)}")
    return "".join(o + "\n" for o in out)

''', "request_guard": r'''
def request_safe(target, hosts=None):
    value = next_of(target)
    return value is None or safe(value, hosts)


def v_classify(target):
    return request_safe(target)


def v_line(target):
    return "ALLOW" if request_safe(target) else "DENY"


def v_audit(text, hosts):
    counts = {}
    for _, ip, target in requests(text, hosts):
        if not request_safe(target, hosts):
            counts[ip] = counts.get(ip, 0) + 1
    return "".join(f"{ip} {c}\n" for ip, c in sorted(counts.items(), key=lambda x: (-x[1], x[0])))

'''}
# What both other variants read from the log and from a request target.
REQUESTS = r'''
LINE = re.compile(r'^([^\s:]+):\d+ (\S+) - - \[[^\]]*\] "GET (\S+) HTTP/1\.[01]" \d{3} \d+$')


def requests(text, hosts):
    """(line number, client IP, request target) of the tenant's requests in the log."""
    for n, line in enumerate(text.splitlines(), 1):
        m = LINE.match(line)
        if m and m.group(1).lower() in hosts:
            yield n, m.group(2), m.group(3)


def next_of(target):
    """Where a request target redirects: its first next value on a redirecting path, else None."""
    path, _, query = target.partition("?")
    if path in REDIRECTORS:
        for param in query.split("&"):
            if param.startswith("next="):
                return param[5:]
    return None

'''
PY_SWAPS = (("audit(sys.stdin.read()", "v_audit(sys.stdin.read()"), ("safe(data)", "v_classify(data)"),
            ('("ALLOW" if safe(l) else "DENY")', "v_line(l)"))

C_EXTRA = {"canonical": r"""
/* The Location the fixed service sends (into out, n + 2 bytes): a safe target in canonical form, else "/". */
static void canon(const char *raw, size_t n, char *out) {
  if (!safe(raw, n)) { strcpy(out, "/"); return; }
  size_t m = 0;
  for (size_t i = 0; i < n; m++) {
    if (raw[i] == '%') { out[m] = (char)(hexval(raw[i + 1]) * 16 + hexval(raw[i + 2])); i += 3; }
    else out[m] = raw[i++];
  }
  out[m] = 0;
  if (out[0] == '/') return;
  memcpy(out, "https://", 8);
  size_t e = 8, c = 8;
  while (out[e] && out[e] != '/' && out[e] != '?' && out[e] != '#') e++;
  for (; c < e && out[c] != ':'; c++) if (out[c] >= 'A' && out[c] <= 'Z') out[c] += 'a' - 'A';
  memmove(out + c, out + e, strlen(out + e) + 1);
}

static int judge(const char *raw, size_t n) {  /* strict: only safe targets that need no rewriting */
  char *c = malloc(n + 2);
  canon(raw, n, c);
  int ok = strlen(c) == n && memcmp(c, raw, n) == 0;
  free(c);
  return ok;
}

static void line(const char *raw, size_t n) {
  char *c = malloc(n + 2);
  canon(raw, n, c);
  puts(c);
  free(c);
}

""", "request_guard": r"""
static const char *REDIRECTORS[] = {"/login/callback", "/logout", NULL};

/* A request target is unsafe only if its path redirects and its first next value is unsafe. */
static int judge(const char *r, size_t n) {
  size_t q = 0, redirects = 0;
  while (q < n && r[q] != '?') q++;
  for (int i = 0; REDIRECTORS[i]; i++)
    if (strlen(REDIRECTORS[i]) == q && memcmp(r, REDIRECTORS[i], q) == 0) redirects = 1;
  if (!redirects) return 1;
  for (size_t p = q + 1, e; p < n; p = e + 1) {
    for (e = p; e < n && r[e] != '&'; e++) {}
    if (e - p >= 5 && memcmp(r + p, "next=", 5) == 0) return safe(r + p + 5, e - p - 5);
  }
  return 1;
}

static void line(const char *r, size_t n) { puts(judge(r, n) ? "ALLOW" : "DENY"); }

"""}
C_SWAPS = (("safe(buf, n) ? 0 : 1", "judge(buf, n) ? 0 : 1"),
           ('puts(safe(buf + start, i - start) ? "ALLOW" : "DENY");', "line(buf + start, i - start);"))
