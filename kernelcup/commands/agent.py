"""`kernelcup agent init PROBLEM`: write an agent guide (AGENTS.md) and the problem's starter into this folder, from
a leaderboard on the server (``kernelcup login``) or a problem folder on this machine (``kernelcup.agent_guide``)."""

from __future__ import annotations

from pathlib import Path

import typer

from kernelcup.commands.common import user_errors
from kernelcup.commands.text import safe
from kernelcup.remote import client_for, resolve, server_option


def register(app: typer.Typer) -> None:
    agent_app = typer.Typer(help="Set a folder up for a coding agent.", no_args_is_help=True)
    app.add_typer(agent_app, name="agent")

    @agent_app.command("init")
    def init_cmd(
        problem: str = typer.Argument(..., help="A leaderboard name on the server, or a problem folder (task.yml)."),
        language: str | None = typer.Option(
            None, "--language", help="The template to start from (default: pytorch if offered, else the first)."
        ),
        device: str | None = typer.Option(None, "--device", "-d", help="The device the commands name."),
        force: bool = typer.Option(False, "--force", help="Overwrite an existing AGENTS.md."),
        server: str | None = server_option(),
    ) -> None:
        """Write AGENTS.md (what to implement, the rules, the exact commands to evaluate, what a result says) and
        the starter file (never overwritten) into the current folder."""
        from kernelcup import agent_guide

        guide_path = Path("AGENTS.md")
        if guide_path.exists() and not force:
            typer.secho("error: AGENTS.md exists here; pass --force to overwrite it", fg=typer.colors.RED, err=True)
            raise typer.Exit(1)
        folder = Path(problem)
        with user_errors():
            if (folder / "task.yml").is_file():
                from leaderboards.problems import load_problem

                loaded = load_problem(folder)
                label = _pick(language, list(loaded.templates))
                starter = "submission" + Path(loaded.task.templates[label]).suffix
                content = loaded.templates[label]
                spec = agent_guide.from_folder(loaded, label, starter)
            else:
                login = resolve(server)
                if login is None:
                    raise typer.BadParameter(
                        f"{problem} is no problem folder here, and no server is configured to ask for a leaderboard "
                        "of that name: `kernelcup login --server URL`, or --server",
                        param_hint="PROBLEM",
                    )
                with client_for(login) as client:
                    board = client.leaderboard(problem)
                    label = _pick(language, list(board.languages))
                    template = client.template(problem, label)
                starter = "submission" + Path(template.file_name).suffix
                content = template.content
                spec = agent_guide.from_leaderboard(board, label, starter, login.server, device)
        guide_path.write_text(agent_guide.render(spec), encoding="utf-8")
        wrote = [str(guide_path)]
        if not Path(starter).exists():
            Path(starter).write_text(content, encoding="utf-8")
            wrote.append(starter)
        typer.echo(f"wrote {', '.join(wrote)} for {safe(spec.name)} (starter: the {safe(label)} template)")


def _pick(language: str | None, offered: list[str]) -> str:
    if not offered:
        raise typer.BadParameter("the problem has no template to start from", param_hint="PROBLEM")
    if language is None:
        return "pytorch" if "pytorch" in offered else offered[0]
    if language not in offered:
        raise typer.BadParameter(f"no {language} template; there are: {', '.join(offered)}", param_hint="--language")
    return language
