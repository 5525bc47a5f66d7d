"""`kernelcup mcp`: serve kernelcup's tools to a coding agent over the Model Context Protocol (stdio), through the
HTTP API and token the CLI uses (``kernelcup.mcp_server``)."""

from __future__ import annotations

from pathlib import Path

import typer

from kernelcup.remote import client_for, resolve, server_option


def register(app: typer.Typer) -> None:
    @app.command("mcp")
    def mcp_cmd(
        server: str | None = server_option(),
        wait_s: float = typer.Option(
            1800.0, "--wait-s", min=1.0, help="The longest an evaluation waits for its result before answering."
        ),
        files_dir: Path | None = typer.Option(
            None,
            "--files-dir",
            help="The only directory whose files a tool's path may name (default: the working directory); hidden "
            "files and symlinks out of it are refused.",
        ),
    ) -> None:
        """Serve kernelcup to an agent over MCP on stdin/stdout: list and read problems, evaluate a file (test,
        benchmark, profile), submit, compare, read results and rankings. Uses the login `kernelcup login` stored."""
        login = resolve(server)
        if login is None:
            typer.secho(
                "error: kernelcup mcp talks to a kernelcup server: `kernelcup login --server URL` first, or pass "
                "--server (or set KERNELCUP_SERVER and KERNELCUP_TOKEN)",
                fg=typer.colors.RED,
                err=True,
            )
            raise typer.Exit(2)
        from kernelcup.mcp_server import build_server

        with client_for(login) as client:
            build_server(client, wait_s=wait_s, files_dir=files_dir).run("stdio")
