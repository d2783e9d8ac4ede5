"""Carve a parent block into subnets (VLSM): size each request to the smallest block with enough usable
hosts, place the largest first at the lowest aligned free address, skip reserved ranges (unaligned ones
at higher levels), and report NONE for requests that no longer fit. One request's host count is the
delivered value."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import run_python
from tmax.families.unseen import unseen

REFERENCE = r'''
import ipaddress
import sys

VNI_BASE = "@@VALUE@@"


def prefix_for(n):
    p = 30
    while p > 0 and 2 ** (32 - p) - 2 < n:
        p -= 1
    return p


def plan(text, base=None):
    base = int(base or VNI_BASE)
    parent, reserved, reqs = None, [], []
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
            result[i] = f"{ipaddress.ip_address(a)}/{prefix_for(n)}"
        else:
            result[i] = "NONE"
    return "".join(f"{reqs[i][0]} {base + i} {result[i]}\n" for i in range(len(reqs)))


if __name__ == "__main__":
    sys.stdout.write(plan(sys.stdin.read(), sys.argv[1] if len(sys.argv) > 1 else None))
'''

# Level 0's program: only the VNI numbering of the requests.
ATOMIC_REFERENCE = r'''
import sys

VNI_BASE = "@@VALUE@@"


def vnis(text, base=None):
    base = int(base or VNI_BASE)
    names = [line.split()[1] for line in text.splitlines() if line.split()[:1] == ["subnet"]]
    return "".join(f"{name} {base + i}\n" for i, name in enumerate(names))


if __name__ == "__main__":
    sys.stdout.write(vnis(sys.stdin.read(), sys.argv[1] if len(sys.argv) > 1 else None))
'''

NAMES = ["web", "db", "cache", "mgmt", "voip", "guest", "iot", "backup", "storage", "dmz", "lab", "printers",
         "cameras", "kubernetes", "payments", "vpn", "wifi", "build", "monitoring", "hr"]
EDGE_HOSTS = [2, 6, 14, 30, 62, 126, 254, 510, 3, 7, 15, 31, 63, 127, 255]


def plan_text(rng, level, reqs, reserved_n, ns):
    """A plan whose requests all fit below level 4 (redrawn until they do; a few draws suffice)."""
    for _ in range(200):
        text = _plan_text(rng, level, reqs, reserved_n)
        if level >= 4 or "NONE" not in ns["plan"](text, "1000"):
            return text
    raise ValueError("cidr_subnet_plan: no plan whose requests all fit in 200 draws")


def _plan_text(rng, level, reqs, reserved_n):
    """Plan file text: a parent block, reserved ranges, subnet requests."""
    parent_prefix = rng.choice([20, 21, 22]) if level >= 2 else 22
    base = ipaddress.ip_network(f"10.{rng.randrange(256)}.{rng.randrange(0, 256, 16)}.0/{parent_prefix}",
                                strict=False)
    shown = str(base)
    if level >= 4:  # written with host bits set
        off = rng.randrange(1, base.num_addresses - 1)
        shown = f"{ipaddress.ip_address(int(base.network_address) + off)}/{parent_prefix}"
    lines = [f"# address plan for site {rng.choice(['ams1', 'fra2', 'lon3', 'nyc1', 'sfo2'])}"] if level >= 2 else []
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
    if level >= 2:  # keep header and parent first; the rest in any order
        tail = lines[2:]
        rng.shuffle(tail)
        lines = lines[:2] + tail
    return "\n".join(lines) + "\n"


VALUE = "the site's VNI base"


def vni_base(t: TaskBuilder, texts: list[str]) -> int:
    """A six-digit VNI base clear (by more than 40) of every number the task shows, so it can only come
    from the channel; shorter numbers turn up by chance in the decodings of a binary channel."""
    return int(unseen(t, lambda: str(t.rng.randrange(100000, 990000)), *texts, near=40))


@dataclass(frozen=True)
class Knobs:
    requests: int  # subnet requests in the plan
    reserved: int  # reserved ranges


@register
class CidrSubnetPlan(Family):
    name = "cidr_subnet_plan"
    domain = "system_administration"
    skill_types = ("Networking",)
    primitive_skills = ("CIDR arithmetic", "VLSM subnet allocation", "address alignment", "reserved range avoidance",
                        "capacity planning")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE}
    levels = {0: Knobs(requests=4, reserved=0), 1: Knobs(requests=4, reserved=0), 2: Knobs(requests=6, reserved=1),
              3: Knobs(requests=8, reserved=3), 4: Knobs(requests=10, reserved=5)}

    def rules(self, level: int) -> tuple[str, str]:
        """(the allocation rules as a bullet list, the output format): both cases state them alike."""
        rules = ["A subnet request `subnet <name> <hosts>` needs the smallest block whose usable hosts (its size "
                 "minus the network and broadcast addresses) are at least `<hosts>`; the smallest block ever "
                 "handed out is a /30.",
                 "Requests are placed largest block first; requests needing blocks of the same size keep the order "
                 "in which they appear in the plan.",
                 "Each block goes at the lowest address inside the parent that is a multiple of its size (aligned) "
                 "and overlaps neither a `reserved` range nor a block already placed."
                 + (" A request that finds no such place gets `NONE` and takes no space." if level >= 4 else ""),
                 "Each subnet is its own VXLAN segment. VNIs follow the plan order of the requests, whatever their "
                 "placement: the first `subnet` line gets the VNI base itself, the next one base + 1, and so on"
                 + (" (a request that gets `NONE` still uses up its VNI)." if level >= 4 else ".")]
        if level >= 2:
            rules.append("`#` starts a comment; lines may come in any order after the `parent` line.")
        if level >= 3:
            rules.append("Reserved ranges need not be aligned to anything you place; any overlap at all counts.")
        if level >= 4:
            rules.append("The parent may be written with host bits set (`10.1.2.77/22`): it means the whole "
                         "enclosing block (`10.1.0.0/22`).")
        rules_txt = "\n".join(f"- {r}" for r in rules)
        fmt = ("one line per request, in the order the requests appear in the plan, as `name vni network/prefix` "
               "(for example `web 120300 10.1.4.0/26`)" + (", or `name vni NONE`" if level >= 4 else ""))
        return rules_txt, fmt

    def program_case(self, t: TaskBuilder) -> None:
        k, rng, level = t.knobs, t.rng, t.level
        ns = run_python(REFERENCE)
        if level == 0:
            return self.atomic_program(t, ns)
        rules_txt, fmt = self.rules(level)
        texts = [plan_text(rng, level, rng.randint(max(2, k.requests - 2), k.requests + 2), k.reserved, ns)
                 for _ in range(10)]
        # The worked examples use a demo base stated in the instruction: they show the format, not our base.
        demo = rng.choice([10000, 20000, 50000, 100000])
        base = vni_base(t, texts[:2] + [rules_txt, fmt])
        cases = [(text, ns["plan"](text, str(demo if i < 2 else base))) for i, text in enumerate(texts)]
        t.deliver(str(base), VALUE)
        t.say("We want a small allocator for our address plans. It reads a plan on standard input: one "
              "`parent <cidr>` line, `reserved <cidr>` lines, and `subnet <name> <hosts>` requests, and "
              f"numbers the subnets' VXLAN VNIs from our site's VNI base, given above.\n\n{rules_txt}\n\n"
              f"Output {fmt}. The worked examples were produced with a demo VNI base of {demo}; your program "
              "must use our site's base.")
        t.expect_program("Hard-code the VNI base.", cases, {"Python": REFERENCE})
        t.solve('sed -i "s/@@VALUE@@/$V1/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, level = t.knobs, t.rng, t.level
        ns = run_python(REFERENCE)
        if level == 0:
            return self.atomic(t, ns)
        rules_txt, fmt = self.rules(level)
        text = plan_text(rng, level, k.requests, k.reserved, ns)
        t.add_file("/app/net/plan.txt", text)
        base = vni_base(t, [rules_txt, fmt])
        truth = ns["plan"](text, str(base))
        v = t.deliver(str(base), VALUE)
        t.say("The address plan for our new site is `/app/net/plan.txt`: one `parent <cidr>` block to carve up, "
              "`reserved <cidr>` ranges already in use, and `subnet <name> <hosts>` requests. Work out where every "
              "subnet goes and which VXLAN VNI it gets; the site's VNI base is given above.\n\n"
              f"{rules_txt}\n\nReport format: {fmt}.")
        t.add_solution_file("subnet_plan.py", REFERENCE)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f'python3 /solution/subnet_plan.py "{v}" < /app/net/plan.txt > /app/out/subnets.txt')
        t.expect_output("/app/out/subnets.txt", truth, "the report")

    def atomic(self, t: TaskBuilder, ns: dict) -> None:
        """Only the VNI numbering: each request's VNI is the base plus its position among the requests."""
        k = t.knobs
        text = plan_text(t.rng, 0, k.requests, k.reserved, ns)
        t.add_file("/app/net/plan.txt", text)
        ask = ("Each `subnet <name> <hosts>` line is its own VXLAN segment: the first `subnet` line gets the VNI "
               "base itself, the next one base + 1, and so on. Write one line per subnet, in plan order, as `name vni` "
               "(for example `web 120300`) to `/app/out/vnis.txt`.")
        base = vni_base(t, [ask])
        truth = "".join(" ".join(line.split()[:2]) + "\n" for line in ns["plan"](text, str(base)).splitlines())
        t.say("The address plan for our new site is `/app/net/plan.txt`.")
        v = t.deliver(str(base), VALUE)
        t.say(ask)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f'awk -v b="{v}" \'$1 == "subnet" {{print $2, b + n++}}\' /app/net/plan.txt > /app/out/vnis.txt')
        t.expect_output("/app/out/vnis.txt", truth, "the VNI list")

    def atomic_program(self, t: TaskBuilder, ns: dict) -> None:
        """Level 0's program: print each request's VNI (the base plus its position among the requests)."""
        k, rng = t.knobs, t.rng
        texts = [plan_text(rng, 0, rng.randint(2, k.requests + 2), k.reserved, ns) for _ in range(10)]
        demo = rng.choice([10000, 20000, 50000, 100000])
        ask = ("We want a small tool that numbers the VXLAN segments of an address plan. It reads a plan on "
               "standard input and prints one line per `subnet <name> <hosts>` line, in plan order, as `name vni`: "
               "the first subnet gets our site's VNI base, given above, the next one base + 1, and so on. The "
               f"worked examples were produced with a demo VNI base of {demo}; your program must use our site's base.")
        base = vni_base(t, texts[:2] + [ask])
        small = run_python(ATOMIC_REFERENCE)
        cases = [(text, small["vnis"](text, str(demo if i < 2 else base))) for i, text in enumerate(texts)]
        t.deliver(str(base), VALUE)
        t.say(ask)
        t.expect_program("Hard-code the VNI base.", cases, {"Python": ATOMIC_REFERENCE})
        t.solve('sed -i "s/@@VALUE@@/$V1/" /app/solution.py')
