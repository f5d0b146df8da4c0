//! `longrun --help`, the man page and the completions are made from one clap tree: every
//! command, flag and argument in it says what it is for, and each output is printed whole.
#![allow(clippy::unwrap_used)]

use std::process::Command;

use clap::CommandFactory;

/// Every command under `cmd`, itself first, each with its path (`longrun bus post`).
fn commands(cmd: &clap::Command, path: &str, out: &mut Vec<(String, clap::Command)>) {
    out.push((path.to_string(), cmd.clone()));
    for sub in cmd.get_subcommands() {
        commands(sub, &format!("{path} {}", sub.get_name()), out);
    }
}

#[test]
fn every_command_flag_and_argument_has_help() {
    // Arrange: the whole tree, as clap builds it (built-in --help and --version included).
    let mut root = longrun::args::Cli::command();
    root.build();
    let mut all = vec![];
    commands(&root, "longrun", &mut all);

    // Act: what has no help text.
    let mut missing = vec![];
    for (path, cmd) in &all {
        if cmd.get_about().is_none() && cmd.get_long_about().is_none() {
            missing.push(path.clone());
        }
        for arg in cmd.get_arguments() {
            if arg.get_help().is_none() && arg.get_long_help().is_none() {
                missing.push(format!("{path} {}", arg.get_id()));
            }
        }
    }

    // Assert
    assert!(
        all.len() > 20,
        "the tree was not walked: {} commands",
        all.len()
    );
    assert!(missing.is_empty(), "without help: {missing:#?}");
}

fn longrun(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_longrun"))
        .args(args)
        .output()
        .unwrap();
    (out.status.success(), String::from_utf8(out.stdout).unwrap())
}

#[test]
fn completions_for_bash_zsh_and_fish_know_every_command() {
    for (shell, marker) in [
        ("bash", "_longrun()"),
        ("zsh", "#compdef longrun"),
        ("fish", "complete -c longrun"),
    ] {
        // Act
        let (ok, script) = longrun(&["completions", shell]);

        // Assert: the shell's own form, naming nested commands and flags.
        assert!(ok, "{shell}");
        assert!(script.contains(marker), "{shell}: {script}");
        for word in ["follow-up", "max-iterations", "completions"] {
            assert!(script.contains(word), "{shell} lacks {word}");
        }
    }
}

#[test]
fn the_man_page_is_roff_with_the_commands_and_the_exit_codes() {
    // Act
    let (ok, page) = longrun(&["man"]);

    // Assert
    assert!(ok);
    assert!(
        page.starts_with(".ie") || page.contains("\n.TH longrun"),
        "{page}"
    );
    assert!(page.contains("follow\\-up"), "{page}");
    assert!(page.contains("Exit codes"), "{page}");
}

#[test]
fn a_command_has_a_man_page_of_its_own() {
    // Act
    let (ok, page) = longrun(&["man", "bus", "post"]);
    let (unknown, _) = longrun(&["man", "nope"]);

    // Assert
    assert!(ok);
    assert!(page.contains(".TH longrun-bus-post 1"), "{page}");
    assert!(page.contains("\\-\\-type"), "{page}");
    assert!(!unknown);
}

#[test]
fn help_lists_the_exit_codes() {
    let (ok, help) = longrun(&["--help"]);
    assert!(ok);
    for line in [
        "3  the run failed",
        "4  the run stopped",
        "6  the run waits on you",
    ] {
        assert!(help.contains(line), "{help}");
    }
}
