"""Carve a parent block into subnets (VLSM): size each request to the smallest block with enough usable
hosts, place the largest first at the lowest aligned free address, skip reserved ranges (unaligned ones
at higher levels), and mark requests that no longer fit. Each request is a VXLAN segment numbered from a
delivered VNI base. Variants: the allocation as `name vni network/prefix` lines; an address inventory as
JSON Lines (network, gateway, broadcast, usable hosts) in address order; or a lookup of the plan's
`host <address>` lines to the subnet each one lands in."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import unseen

REFERENCE = r'''
import ipaddress
import json
import sys

VNI_BASE = "@@VALUE@@"
VARIANT = @VARIANT@


def prefix_for(n):
    p = 30
    while p > 0 and 2 ** (32 - p) - 2 < n:
        p -= 1
    return p


def parse(text):
    parent, reserved, reqs, hosts = None, [], [], []
    for line in text.splitlines():
        parts = line.split("#", 1)[0].split()
        if not parts:
            continue
        if parts[0] == "parent":
            parent = ipaddress.ip_network(parts[1], strict=False)
        elif parts[0] == "reserved":
            net = ipaddress.ip_network(parts[1], strict=False)
            reserved.append((int(net.network_address), int(net.broadcast_address)))
        elif parts[0] == "subnet":
            reqs.append((parts[1], int(parts[2])))
        elif parts[0] == "host":
            hosts.append(parts[1])
    return parent, reserved, reqs, hosts


def allocate(text):
    """Per request in plan order: (name, its block as an ip_network, or None when it does not fit)."""
    parent, reserved, reqs, _ = parse(text)
    lo, hi = int(parent.network_address), int(parent.broadcast_address)
    taken = list(reserved)
    result = {}
    for i in sorted(range(len(reqs)), key=lambda i: (prefix_for(reqs[i][1]), i)):
        name, n = reqs[i]
        size = 2 ** (32 - prefix_for(n))
        a = lo
        while a + size - 1 <= hi:
            clash = [t for t in taken if t[0] <= a + size - 1 and t[1] >= a]
            if not clash:
                break
            top = max(t[1] for t in clash) + 1
            a = (top + size - 1) // size * size
        if size <= hi - lo + 1 and a + size - 1 <= hi:
            taken.append((a, a + size - 1))
            result[i] = ipaddress.ip_network(f"{ipaddress.ip_address(a)}/{prefix_for(n)}")
        else:
            result[i] = None
    return [(reqs[i][0], result[i]) for i in range(len(reqs))]


def record(name, vni, net):
    if net is None:
        return {"name": name, "vni": vni, "network": None}
    return {"name": name, "vni": vni, "network": str(net), "gateway": str(net.network_address + 1),
            "broadcast": str(net.broadcast_address), "usable": net.num_addresses - 2}


def plan(text, base=None):
    base = int(base or VNI_BASE)
    blocks = [(name, base + i, net) for i, (name, net) in enumerate(allocate(text))]
    if VARIANT == "inventory":  # placed blocks by address, then the ones that did not fit in plan order
        placed = sorted((b for b in blocks if b[2] is not None), key=lambda b: int(b[2].network_address))
        rows = placed + [b for b in blocks if b[2] is None]
        return "".join(json.dumps(record(*b)) + "\n" for b in rows)
    if VARIANT == "lookup":
        out = []
        for h in parse(text)[3]:
            addr = ipaddress.ip_address(h)
            hit = [(name, vni) for name, vni, net in blocks if net is not None and addr in net]
            out.append(f"{h} {hit[0][0]} {hit[0][1]}\n" if hit else f"{h} NONE\n")
        return "".join(out)
    return "".join(f"{name} {vni} {net if net is not None else 'NONE'}\n" for name, vni, net in blocks)


if __name__ == "__main__":
    sys.stdout.write(plan(sys.stdin.read(), sys.argv[1] if len(sys.argv) > 1 else None))
'''

# Level 0's program: only the VNI numbering of the requests (lookup: of the subnet each host names).
ATOMIC_REFERENCE = r'''
import sys

VNI_BASE = "@@VALUE@@"
VARIANT = @VARIANT@


def vnis(text, base=None):
    base = int(base or VNI_BASE)
    lines = [line.split() for line in text.splitlines()]
    vni = {f[1]: base + i for i, f in enumerate(f for f in lines if f[:1] == ["subnet"])}
    if VARIANT == "lookup":
        return "".join(f"{f[1]} {vni[f[2]]}\n" for f in lines if f[:1] == ["host"])
    if VARIANT == "inventory":
        return "".join(f'{{"name": "{name}", "vni": {v}}}\n' for name, v in vni.items())
    return "".join(f"{name} {v}\n" for name, v in vni.items())


if __name__ == "__main__":
    sys.stdout.write(vnis(sys.stdin.read(), sys.argv[1] if len(sys.argv) > 1 else None))
'''

NAMES = ["web", "db", "cache", "mgmt", "voip", "guest", "iot", "backup", "storage", "dmz", "lab", "printers",
         "cameras", "kubernetes", "payments", "vpn", "wifi", "build", "monitoring", "hr"]
EDGE_HOSTS = [2, 6, 14, 30, 62, 126, 254, 510, 3, 7, 15, 31, 63, 127, 255]
SITES = ["ams", "fra", "lon", "nyc", "sfo", "sin", "syd", "par", "mad", "waw", "osl", "yul"]
HOST_NAMES = ["printer", "ap", "cam", "kiosk", "nas", "phone", "sensor", "badge", "ups", "switch"]


def plan_text(rng, level, reqs, reserved_n, ns, hosts=0, inside=False):
    """A plan whose requests all fit below level 4 (redrawn until they do; a few draws suffice), with
    ``hosts`` probe lines `host <address>` (mostly inside placed blocks, some on their edges, some anywhere
    unless ``inside``: under partial credit a `NONE` line would score whatever the VNI base)."""
    for _ in range(200):
        lines, site = _plan_lines(rng, level, reqs, reserved_n)
        text = "\n".join(lines) + "\n"
        blocks = [net for _, net in ns["allocate"](text)]
        if level < 4 and None in blocks:
            continue
        if hosts:
            lines += [f"host {a}" for a in _probes(rng, level, text, [b for b in blocks if b is not None], hosts,
                                                   inside)]
        if level >= 2:  # keep header and parent first; the rest in any order
            tail = lines[2:]
            rng.shuffle(tail)
            lines = lines[:2] + tail
        return "\n".join(lines) + "\n", site
    raise ValueError("cidr_subnet_plan: no plan whose requests all fit in 200 draws")


def _probes(rng, level, text, blocks, n, inside):
    parent = ipaddress.ip_network(text.split("parent ", 1)[1].split()[0], strict=False)
    out = []
    for i in range(n):
        r = rng.random()
        if i and r < 0.2 and not inside:  # anywhere in the parent: free space, a reserved range or a block
            out.append(parent.network_address + rng.randrange(parent.num_addresses))
            continue
        net = rng.choice(blocks)
        if level >= 3 and r < 0.45:  # a block's own network or broadcast address is inside it
            out.append(rng.choice([net.network_address, net.broadcast_address]))
        else:
            out.append(net.network_address + rng.randrange(1, net.num_addresses - 1))
    return [str(a) for a in out]


def _plan_lines(rng, level, reqs, reserved_n):
    """Plan file lines: a parent block, reserved ranges, subnet requests; and the site's name."""
    parent_prefix = rng.choice([20, 21, 22]) if level >= 2 else 22
    base = ipaddress.ip_network(f"10.{rng.randrange(256)}.{rng.randrange(0, 256, 16)}.0/{parent_prefix}",
                                strict=False)
    shown = str(base)
    if level >= 4:  # written with host bits set
        off = rng.randrange(1, base.num_addresses - 1)
        shown = f"{ipaddress.ip_address(int(base.network_address) + off)}/{parent_prefix}"
    site = f"{rng.choice(SITES)}{rng.randrange(1, 10)}"
    lines = [f"# address plan for site {site}"] if level >= 2 else []
    lines.append(f"parent {shown}")
    total = base.num_addresses
    for _ in range(reserved_n):
        if level >= 3 and rng.random() < 0.5:  # an unaligned single host or small odd block
            addr = int(base.network_address) + rng.randrange(total)
            net = ipaddress.ip_network(f"{ipaddress.ip_address(addr)}/{rng.choice([32, 31, 29])}", strict=False)
        else:
            p = rng.choice([24, 25, 26, 27])
            slots = total // 2 ** (32 - p)
            net = ipaddress.ip_network(
                f"{ipaddress.ip_address(int(base.network_address) + rng.randrange(slots) * 2 ** (32 - p))}/{p}")
        lines.append(f"reserved {net}" + (f"  # {rng.choice(['legacy', 'vendor', 'router', 'old vpn'])}"
                                          if level >= 2 and rng.random() < 0.4 else ""))
    names = rng.sample(NAMES, reqs)
    for name in names:
        if level >= 2 and rng.random() < 0.35:
            n = str(rng.choice(EDGE_HOSTS))
        else:
            n = str(rng.randint(2, max(2, total // (3 * reqs))))
        lines.append(f"subnet {name} {n}")
    if level >= 4:  # one request that cannot fit any more
        lines.append(f"subnet {rng.choice([x for x in NAMES if x not in names])} {total // 2 + rng.randint(1, 50)}")
    return lines, site


VALUE = "the site's VNI base"


def vni_base(t: TaskBuilder, texts: list[str]) -> int:
    """A six-digit VNI base clear (by more than 40) of every number the task shows, so it can only come
    from the channel; shorter numbers turn up by chance in the decodings of a binary channel."""
    return int(unseen(t, lambda: str(t.rng.randrange(100000, 990000)), *texts, near=40))


def _say(rng, *phrasings: str) -> str:
    """One of several equivalent phrasings, so that seeds differ in wording, not only in numbers."""
    return rng.choice(phrasings)


@dataclass(frozen=True)
class Knobs:
    requests: int  # subnet requests in the plan
    reserved: int  # reserved ranges
    hosts: int  # probe addresses (the lookup variant)


@register
class CidrSubnetPlan(Family):
    name = "cidr_subnet_plan"
    domain = "system_administration"
    skill_types = ("Networking",)
    primitive_skills = ("CIDR arithmetic", "VLSM subnet allocation", "address alignment", "reserved range avoidance",
                        "capacity planning")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE}
    variants = ("allocate", "inventory", "lookup")
    levels = {0: Knobs(requests=4, reserved=0, hosts=4), 1: Knobs(requests=4, reserved=0, hosts=6),
              2: Knobs(requests=6, reserved=1, hosts=8), 3: Knobs(requests=8, reserved=3, hosts=10),
              4: Knobs(requests=10, reserved=5, hosts=12)}

    def rules(self, t: TaskBuilder) -> tuple[str, str]:
        """(the allocation rules as a bullet list, the output format): both cases state them alike."""
        rng, level, v = t.rng, t.level, t.variant
        rules = [_say(rng, "A subnet request `subnet <name> <hosts>` needs the smallest block whose usable hosts (its "
                      "size minus the network and broadcast addresses) are at least `<hosts>`; the smallest block "
                      "ever handed out is a /30.",
                      "Size every `subnet <name> <hosts>` request to the smallest CIDR block with at least `<hosts>` "
                      "usable addresses, not counting the block's network and broadcast addresses. Nothing smaller "
                      "than a /30 is handed out."),
                 _say(rng, "Requests are placed largest block first; requests needing blocks of the same size keep "
                      "the order in which they appear in the plan.",
                      "Place the biggest blocks first. Among requests whose blocks are equally big, the one listed "
                      "earlier in the plan goes first."),
                 _say(rng, "Each block goes at the lowest address inside the parent that is a multiple of its size "
                      "(aligned) and overlaps neither a `reserved` range nor a block already placed.",
                      "A block lands at the lowest address of the parent that is aligned to the block's own size and "
                      "where it touches no `reserved` range and no block placed before it.")
                 + (" A request that finds no such place gets `NONE` and takes no space." if level >= 4 else ""),
                 "Each subnet is its own VXLAN segment. VNIs follow the plan order of the requests, whatever their "
                 "placement: the first `subnet` line gets the VNI base itself, the next one base + 1, and so on"
                 + (" (a request that gets `NONE` still uses up its VNI)." if level >= 4 else ".")]
        if level >= 2:
            rules.append(_say(rng, "`#` starts a comment; lines may come in any order after the `parent` line.",
                              "Text after `#` is a comment, and after the `parent` line the other lines are in no "
                              "particular order."))
        if level >= 3:
            rules.append("Reserved ranges need not be aligned to anything you place; any overlap at all counts.")
        if level >= 4:
            rules.append("The parent may be written with host bits set (`10.1.2.77/22`): it means the whole "
                         "enclosing block (`10.1.0.0/22`).")
        rules_txt = "\n".join(f"- {r}" for r in rules)
        if v == "inventory":
            fmt = ("one JSON object per line for every placed block, in ascending address order, exactly as "
                   "Python's `json.dumps` writes it with these keys in this order: `{\"name\": \"web\", \"vni\": "
                   "120300, \"network\": \"10.1.4.0/26\", \"gateway\": \"10.1.4.1\", \"broadcast\": \"10.1.4.63\", "
                   "\"usable\": 62}` (the gateway is the block's first usable address)"
                   + (". Requests that got no block follow, in plan order, as `{\"name\": \"lab\", \"vni\": 120309, "
                      "\"network\": null}`" if level >= 4 else ""))
        elif v == "lookup":
            fmt = ("one line per `host <address>` line of the plan, in plan order, as `address name vni` naming the "
                   "placed block that contains the address (a block's network and broadcast addresses are inside "
                   "it; for example `10.1.4.9 web 120300`)" + ("" if t.partial_credit else
                                                                   ", or `address NONE` when no placed block "
                                                                   "contains it"))
        else:
            fmt = ("one line per request, in the order the requests appear in the plan, as `name vni network/prefix` "
                   "(for example `web 120300 10.1.4.0/26`)" + (", or `name vni NONE`" if level >= 4 else ""))
        return rules_txt, fmt

    def program_case(self, t: TaskBuilder) -> None:
        k, rng, level = t.knobs, t.rng, t.level
        if level == 0:
            return self.atomic_program(t)
        src = fill(REFERENCE, VARIANT=repr(t.variant))
        ns = run_python(src)
        rules_txt, fmt = self.rules(t)
        hosts = k.hosts if t.variant == "lookup" else 0
        texts = [plan_text(rng, level, rng.randint(max(2, k.requests - 2), k.requests + 2), k.reserved, ns,
                           hosts)[0] for _ in range(10)]
        # The worked examples use a demo base stated in the instruction: they show the format, not our base.
        demo = rng.choice([10000, 20000, 50000, 100000])
        base = vni_base(t, texts[:2] + [rules_txt, fmt])
        cases = [(text, ns["plan"](text, str(demo if i < 2 else base))) for i, text in enumerate(texts)]
        t.deliver(str(base), VALUE)
        probe = " and `host <address>` lines" if hosts else ""
        t.say(_say(rng, "We want a small allocator for our address plans.", "Our network team wants a tool that "
                   "lays out address plans.") + " It reads a plan on standard input: one `parent <cidr>` line, "
              f"`reserved <cidr>` lines, `subnet <name> <hosts>` requests{probe}, and numbers the subnets' VXLAN "
              f"VNIs from our site's VNI base, given above.\n\n{rules_txt}\n\n"
              f"Output {fmt}. The worked examples were produced with a demo VNI base of {demo}; your program "
              "must use our site's base.")
        t.expect_program("Hard-code the VNI base.", cases, {"Python": src})
        t.solve('sed -i "s/@@VALUE@@/$V1/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, level, v = t.knobs, t.rng, t.level, t.variant
        if level == 0:
            return self.atomic(t)
        src = fill(REFERENCE, VARIANT=repr(v))
        ns = run_python(src)
        rules_txt, fmt = self.rules(t)
        text, site = plan_text(rng, level, k.requests, k.reserved, ns, k.hosts if v == "lookup" else 0,
                               inside=t.partial_credit)
        path = f"/app/net/{site}-{rng.choice(['plan', 'addressing', 'ipam'])}.txt"
        out = "/app/out/" + {"allocate": "subnets.txt", "inventory": "inventory.jsonl", "lookup": "hosts.txt"}[v]
        t.add_file(path, text)
        base = vni_base(t, [rules_txt, fmt])
        truth = ns["plan"](text, str(base))
        vni = t.deliver(str(base), VALUE)
        probe = (" The plan also lists `host <address>` lines: addresses seen on the wire that I need placed in the "
                 "new layout." if v == "lookup" else "")
        what = {"allocate": _say(rng, "Work out where every subnet goes and which VXLAN VNI it gets",
                                 "Tell me where each subnet lands and its VXLAN VNI"),
                "inventory": _say(rng, "I need the address inventory of the new layout for our IPAM import",
                                  "Produce the IPAM import of the finished layout"),
                "lookup": _say(rng, "Tell me which new subnet each of those addresses falls in",
                               "Map each of those addresses to its new subnet")}[v]
        t.say(_say(rng, f"The address plan for our new site is `{path}`", f"Site {site} is being readdressed; its "
                   f"plan is `{path}`") + ": one `parent <cidr>` block to carve up, `reserved <cidr>` ranges already "
              f"in use, and `subnet <name> <hosts>` requests.{probe} {what}; the site's VNI base is given above.\n\n"
              f"{rules_txt}\n\nWrite to `{out}` {fmt}.")
        t.add_solution_file("subnet_plan.py", src)
        t.solve(f'test -n "{vni}"\nmkdir -p /app/out\n'
                f'python3 /solution/subnet_plan.py "{vni}" < {path} > {out}')
        t.expect_output(out, truth, {"allocate": "the report", "inventory": "the inventory",
                                     "lookup": "the host lookup"}[v])

    def _atomic_plan(self, t: TaskBuilder, rng, requests: int) -> str:
        """Level 0's plan: lookup adds `host <address> <subnet>` lines naming the subnet each host is on."""
        k = t.knobs
        text = plan_text(rng, 0, requests, k.reserved, run_python(fill(REFERENCE, VARIANT=repr("allocate"))))[0]
        if t.variant != "lookup":
            return text
        names = [line.split()[1] for line in text.splitlines() if line.startswith("subnet ")]
        parent = ipaddress.ip_network(text.split()[1])
        return text + "".join(f"host {parent.network_address + rng.randrange(1, parent.num_addresses - 1)} "
                              f"{rng.choice(names)}\n" for _ in range(k.hosts))

    def atomic_ask(self, t: TaskBuilder) -> str:
        return {"allocate": "one line per subnet, in plan order, as `name vni` (for example `web 120300`)",
                "inventory": "one JSON object per subnet, in plan order, one per line, as "
                             "`{\"name\": \"web\", \"vni\": 120300}`",
                "lookup": "one line per `host <address> <subnet>` line, in plan order, as `address vni` with the VNI "
                          "of the subnet the host is on (for example `10.1.4.9 120300`)"}[t.variant]

    def atomic(self, t: TaskBuilder) -> None:
        """Only the VNI numbering: each request's VNI is the base plus its position among the requests."""
        k, v = t.knobs, t.variant
        text = self._atomic_plan(t, t.rng, k.requests)
        t.add_file("/app/net/plan.txt", text)
        out = "/app/out/" + {"allocate": "vnis.txt", "inventory": "vnis.jsonl", "lookup": "host_vnis.txt"}[v]
        ask = ("Each `subnet <name> <hosts>` line is its own VXLAN segment: the first `subnet` line gets the VNI "
               f"base itself, the next one base + 1, and so on. Write {self.atomic_ask(t)} to `{out}`.")
        base = vni_base(t, [ask])
        src = fill(ATOMIC_REFERENCE, VARIANT=repr(v))
        truth = run_python(src)["vnis"](text, str(base))
        t.say("The address plan for our new site is `/app/net/plan.txt`.")
        vni = t.deliver(str(base), VALUE)
        t.say(ask)
        prog = {"allocate": '$1 == "subnet" {print $2, b + n++}',
                "inventory": '$1 == "subnet" {printf "{\\"name\\": \\"%s\\", \\"vni\\": %d}\\n", $2, b + n++}',
                "lookup": '$1 == "subnet" {v[$2] = b + n++} $1 == "host" {print $2, v[$3]}'}[v]
        t.solve(f'test -n "{vni}"\nmkdir -p /app/out\n'
                f'awk -v b="{vni}" \'{prog}\' /app/net/plan.txt > {out}')
        t.expect_output(out, truth, "the VNI list")

    def atomic_program(self, t: TaskBuilder) -> None:
        """Level 0's program: print each request's VNI (the base plus its position among the requests)."""
        k, rng = t.knobs, t.rng
        texts = [self._atomic_plan(t, rng, rng.randint(2, k.requests + 2)) for _ in range(10)]
        demo = rng.choice([10000, 20000, 50000, 100000])
        ask = ("We want a small tool that numbers the VXLAN segments of an address plan. It reads a plan on "
               "standard input; each `subnet <name> <hosts>` line is a segment: the first subnet gets our site's VNI "
               f"base, given above, the next one base + 1, and so on. It prints {self.atomic_ask(t)}. The "
               f"worked examples were produced with a demo VNI base of {demo}; your program must use our site's base.")
        base = vni_base(t, texts[:2] + [ask])
        src = fill(ATOMIC_REFERENCE, VARIANT=repr(t.variant))
        small = run_python(src)
        cases = [(text, small["vnis"](text, str(demo if i < 2 else base))) for i, text in enumerate(texts)]
        t.deliver(str(base), VALUE)
        t.say(ask)
        t.expect_program("Hard-code the VNI base.", cases, {"Python": src})
        t.solve('sed -i "s/@@VALUE@@/$V1/" /app/solution.py')
