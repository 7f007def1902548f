"""Erlang's ``cover`` in a running node: a RabbitMQ's modules compiled for coverage in place, and
their lines read while it runs.

Everything goes through ``erl_call`` (Erlang's C client, some ten milliseconds a call): it joins
the node as a hidden node with the node's cookie, which it reads from ``$HOME/.erlang.cookie``
(so the cookie is never on a command line), evaluates an expression and prints what it writes.
``ERL_EPMD_PORT`` says where the node's port mapper listens. A module already compiled for
coverage (by amqpfuzz, or by whoever runs the node) is measured as it is: compiling it again
would load it again, which kills the processes running it.
"""

from __future__ import annotations

import bisect
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .plans import Plan
from .probe import CoverageError, Layout, ModuleSample, Sample

__all__ = ["ERL_CALL", "ErlangCover", "cookie_home"]

ERL_CALL = "/usr/lib/erlang/bin/erl_call"
_PAIR = re.compile(r"\{'?([a-z0-9_]+)'?,(\d+)\}")

_PREPARE = """
cover:local_only(),
lists:foreach(fun(M) ->
    R = case cover:is_compiled(M) of
        false ->
            case code:which(M) of
                non_existing -> missing;
                _ -> case cover:compile_beam(M) of {ok, _} -> compiled; {error, E} -> E end
            end;
        _ -> already
    end,
    io:format("~s ~w~n", [M, R])
end, [%s]).
"""

# (The node evaluates what erl_call sends, interpreted: the covered lines are picked out by a
# compiled match specification and printed whole, not looped over.)
_SAMPLE = """
case cover:analyse([%s], coverage, line) of
    {result, Ls, _} ->
        Covered = ets:match_spec_run(Ls, ets:match_spec_compile(
            [{{{'$1', '$2'}, {'$3', '_'}}, [{'>', '$3', 0}], [{{'$1', '$2'}}]}])),
        io:format("~w~n", [Covered]);
    _ -> ok
end.
"""

# Each module's relevant lines, and its functions: name/arity, relevant lines, and the line
# it begins on (from the beam's abstract code; 0 where the beam has none), so that a sample
# of lines alone says which functions were entered.
_LAYOUT = """
lists:foreach(fun(M) ->
    Starts = case beam_lib:chunks(code:where_is_file(atom_to_list(M) ++ ".beam"),
                                  [abstract_code]) of
        {ok, {_, [{abstract_code, {_, Forms}}]}} ->
            maps:from_list([{{F, A}, erl_anno:line(Anno)}
                            || {function, Anno, F, A, _} <- Forms]);
        _ -> #{}
    end,
    case {cover:analyse(M, coverage, line), cover:analyse(M, coverage, function)} of
        {{ok, Ls}, {ok, Fs}} ->
            io:format("~s\\t~w\\t~ts~n", [M, length(Ls),
                lists:join(" ", [[atom_to_list(F), "/", integer_to_list(A), ":",
                                  integer_to_list(C + N), ":",
                                  integer_to_list(maps:get({F, A}, Starts, 0))]
                                 || {{_, F, A}, {C, N}} <- Fs])]);
        _ -> ok
    end
end, [%s]).
"""


def cookie_home(cookie_file: Path) -> Path:
    """A private directory holding a copy of ``cookie_file`` as ``.erlang.cookie`` (erl_call's
    ``$HOME``). The caller removes it."""
    try:
        cookie = cookie_file.read_text().strip()
    except OSError as exc:
        raise CoverageError(
            f"{cookie_file}: cannot read the Erlang cookie: {exc.strerror}"
        ) from None
    if not cookie:
        raise CoverageError(f"{cookie_file}: the Erlang cookie file is empty")
    home = Path(tempfile.mkdtemp(prefix="amqpfuzz-cookie-"))
    path = home / ".erlang.cookie"
    path.write_text(cookie)
    path.chmod(0o400)
    return home


@dataclass
class ErlangCover:
    """The modules of ``plan`` in the Erlang node ``node`` (``name@host``): ``home`` holds its
    cookie (``.erlang.cookie``), ``epmd_port`` is its port mapper's (None: the environment's
    or the default)."""

    plan: Plan
    node: str
    home: Path
    epmd_port: int | None = None
    timeout: float = 60.0
    _atoms: str = field(init=False, repr=False, default="")
    # per module, where its functions begin (sorted) and their names: known once laid out
    _starts: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] | None = field(
        init=False, repr=False, default=None
    )

    def __post_init__(self) -> None:
        self._atoms = ",".join(f"'{m}'" for m in self.plan.modules)

    @property
    def where(self) -> str:
        return f"Erlang node {self.node}"

    def prepare(self) -> list[str]:
        done: dict[str, list[str]] = {}
        for line in self._call(_PREPARE % self._atoms, 600.0):
            module, _, result = line.partition(" ")
            done.setdefault(result, []).append(module)
        notes = []
        if done.get("compiled"):
            notes.append(f"{len(done.pop('compiled'))} modules compiled for coverage")
        if done.get("already"):
            notes.append(f"{len(done.pop('already'))} already compiled, measured as they are")
        if done.get("missing"):
            notes.append(f"not loaded in the node: {', '.join(done.pop('missing'))}")
        for result, modules in done.items():
            notes.append(f"{', '.join(modules)}: cannot be compiled for coverage ({result})")
        return notes

    def sample(self) -> Sample:
        """The lines covered (one analysis of every module, some fifteen milliseconds in the
        node); the functions entered are those the lines are in."""
        if self._starts is None:
            self.layout()
        lines: dict[str, set[int]] = {}
        for module, number in _PAIR.findall(
            "".join(self._call(_SAMPLE % self._atoms, self.timeout))
        ):
            lines.setdefault(module, set()).add(int(number))
        return Sample(
            {
                module: ModuleSample(frozenset(covered), self._entered(module, covered))
                for module, covered in lines.items()
            }
        )

    def _entered(self, module: str, lines: set[int]) -> frozenset[str]:
        """The functions ``lines`` are in: each line's is the last to begin before it."""
        starts, names = (self._starts or {}).get(module, ((), ()))
        return frozenset(
            names[at - 1] for at in {bisect.bisect_right(starts, n) for n in lines} if at
        )

    def layout(self) -> Layout:
        relevant, functions = {}, {}
        starts: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = {}
        for line in self._call(_LAYOUT % self._atoms, self.timeout):
            module, count, listed = [*line.split("\t"), "", ""][:3]
            relevant[module] = int(count)
            entries = [f.split(":") for f in listed.split()]
            functions[module] = {name: int(lines) for name, lines, _ in entries}
            begun = sorted((int(start), name) for name, _, start in entries if int(start) > 0)
            starts[module] = (tuple(s for s, _ in begun), tuple(n for _, n in begun))
        self._starts = starts
        return Layout(relevant, functions)

    def _call(self, expression: str, timeout: float) -> list[str]:
        """The lines ``expression`` prints in the node."""
        if not os.path.exists(ERL_CALL):
            raise CoverageError(f"{ERL_CALL} is not installed (Debian's erlang-base has it)")
        flag = "-name" if "." in self.node.partition("@")[2] else "-sname"
        env = {**os.environ, "HOME": str(self.home)}
        if self.epmd_port is not None:
            env["ERL_EPMD_PORT"] = str(self.epmd_port)
        command = [ERL_CALL, flag, self.node, "-r", "-timeout", str(int(timeout))]
        command += ["-fetch_stdout", "-no_result_term", "-e"]
        try:
            done = subprocess.run(
                command,
                input=expression.strip().encode() + b"\n",
                capture_output=True,
                env=env,
                timeout=timeout + 5,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise CoverageError(f"{self.where}: no answer in {timeout:g} s") from None
        if done.returncode != 0:
            why = (done.stderr or done.stdout).decode(errors="replace").split()
            raise CoverageError(f"{self.where}: {' '.join(why) or 'erl_call failed'}")
        return done.stdout.decode(errors="replace").splitlines()

    def close(self) -> None:
        """Remove a private cookie directory made for this probe."""
        if self.home.name.startswith("amqpfuzz-cookie-"):
            shutil.rmtree(self.home, ignore_errors=True)
