from gradcli.cli.fast import command

command()
