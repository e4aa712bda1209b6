{
  description = "Kafka vs Pulsar at equal durability: the pinned toolchain, the broker distributions, the runner and the paper";

  # One input; flake.lock pins it (rev + narHash from a public flake.lock, see README.md).
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";

  outputs = { self, nixpkgs }:
    let
      lib = nixpkgs.lib;
      systems = [ "x86_64-linux" "aarch64-linux" ];
      forAllSystems = f: lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});

      # The same sources the non-Nix path uses; build outputs and caches are left out.
      src = lib.cleanSourceWith {
        src = ./.;
        filter = path: type:
          let base = baseNameOf path; in
            !(builtins.elem base [ ".venv" ".cache" ".snakemake" "target" "result" "__pycache__" ]);
      };

      # Python side of the toolchain: the names of env/requirements.in (versions come from nixpkgs here).
      pythonFor = pkgs: pkgs.python3.withPackages (ps: with ps; [
        pyyaml
        jsonschema
        polars
        altair
        vl-convert-python
        ipykernel
        jupytext
        nbclient
        nbformat
        pytest
        pytest-timeout
      ]);

      # Exports the environment of CONTRIBUTING.md, as env/shell does.
      shellHook = ''
        export STREAMBENCH_ROOT="$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
        export STREAMBENCH_CACHE="''${STREAMBENCH_CACHE:-$STREAMBENCH_ROOT/.cache}"
        export MAVEN_OPTS="''${MAVEN_OPTS:+$MAVEN_OPTS }-Dmaven.repo.local=$STREAMBENCH_CACHE/m2"
        export PYTHONPATH="$STREAMBENCH_ROOT:$STREAMBENCH_ROOT/hw-probes''${PYTHONPATH:+:$PYTHONPATH}"
        # `snakemake --profile NAME` finds env/profiles/NAME through <XDG_CONFIG_DIRS[0]>/snakemake
        export XDG_CONFIG_DIRS="$STREAMBENCH_ROOT/env/xdg:''${XDG_CONFIG_DIRS:-/etc/xdg}"
        export QUARTO_PYTHON="$(command -v python3)"
      '';

      # The Maven modules, built from the root pom (versions live there only).
      # mvnHash: the hash of the fixed-output dependency download. It can only be computed by a Nix build
      # with network access (nix build .#<name> prints the real value on the first, failing try); the
      # machines this artifact was written on have no Nix store, so it is lib.fakeHash until someone with
      # Nix runs that build and pastes the printed hash here. It is NOT a real pin yet.
      mavenModule = pkgs: { pname, module, mvnHash ? lib.fakeHash }:
        pkgs.maven.buildMavenPackage {
          inherit pname src mvnHash;
          version = "0.1.0";
          mvnJdk = pkgs.jdk17;
          mvnParameters = "-pl ${module} -am -DskipTests";
          installPhase = ''
            runHook preInstall
            mkdir -p $out/share/streambench/${module}
            cp -r ${module}/target/. $out/share/streambench/${module}/
            if [ -d ${module}/bin ]; then cp -r ${module}/bin $out/share/streambench/${module}/bin; fi
            runHook postInstall
          '';
        };
    in
    {
      devShells = forAllSystems (pkgs: {
        default = pkgs.mkShell {
          packages = with pkgs; [
            (pythonFor pkgs)
            snakemake
            jdk17
            maven
            fio
            quarto
            pandoc
            typst
            opentofu
            ansible
            git
            poppler-utils
            nixpkgs-fmt
          ];
          inherit shellHook;
        };
      });

      packages = forAllSystems (pkgs: {
        runner = mavenModule pkgs { pname = "streambench-runner"; module = "runner"; };
        kafka-dist = mavenModule pkgs { pname = "streambench-kafka-dist"; module = "systems/kafka"; };
        pulsar-dist = mavenModule pkgs { pname = "streambench-pulsar-dist"; module = "systems/pulsar"; };
        # The paper from the committed sources plus the figures and tables the DAG made
        # (paper/figures, paper/tables, paper/_variables.yml must be present in the source tree).
        paper = pkgs.stdenvNoCC.mkDerivation {
          pname = "streambench-paper";
          version = "0.1.0";
          inherit src;
          nativeBuildInputs = [ pkgs.quarto pkgs.typst (pythonFor pkgs) ];
          # the same command as the paper rule of paper/rules.smk
          buildPhase = ''
            export HOME=$TMPDIR PYTHONPATH=$PWD:$PWD/hw-probes
            python -m paper.render --paper paper --renderer quarto
          '';
          installPhase = ''
            mkdir -p $out
            cp -r paper/_build/. $out/
          '';
        };
      });

      checks = forAllSystems (pkgs: {
        # The unit tests (integration tests start brokers; they run in env/test on a real machine).
        unit-tests = pkgs.runCommand "streambench-unit-tests"
          {
            nativeBuildInputs = [ (pythonFor pkgs) pkgs.snakemake pkgs.git ];
          } ''
          cp -r ${src} source && chmod -R u+w source && cd source
          export HOME=$TMPDIR PYTHONPATH=$PWD:$PWD/hw-probes
          # env/shell's own tests need Debian and its venv; the profile tests run Snakemake from that venv
          python -m pytest -q -m "not integration" -p no:cacheprovider \
            --ignore=env/tests/test_env_shell.py --ignore=env/tests/test_profiles.py
          touch $out
        '';
        formatting = pkgs.runCommand "streambench-nix-format"
          {
            nativeBuildInputs = [ pkgs.nixpkgs-fmt ];
          } ''
          nixpkgs-fmt --check ${./flake.nix}
          touch $out
        '';
      });

      formatter = forAllSystems (pkgs: pkgs.nixpkgs-fmt);
    };
}
