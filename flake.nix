{
  description = "Kafka vs Pulsar at equal durability: the pinned toolchain, the broker distributions, the runner and the paper";

  # flake.lock pins every input (rev + narHash copied from public flake.lock files, see docs/locks.md).
  inputs = {
    nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";
    # uv2nix reads uv.lock (the one Python lock, which env/shell installs with `uv sync`) file by file
    pyproject-nix = {
      url = "github:pyproject-nix/pyproject.nix";
      inputs.nixpkgs.follows = "nixpkgs";
    };
    uv2nix = {
      url = "github:pyproject-nix/uv2nix";
      inputs.pyproject-nix.follows = "pyproject-nix";
      inputs.nixpkgs.follows = "nixpkgs";
    };
    pyproject-build-systems = {
      url = "github:pyproject-nix/build-system-pkgs";
      inputs.pyproject-nix.follows = "pyproject-nix";
      inputs.uv2nix.follows = "uv2nix";
      inputs.nixpkgs.follows = "nixpkgs";
    };
  };

  outputs = { self, nixpkgs, pyproject-nix, uv2nix, pyproject-build-systems }:
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

      # Python: the wheels of uv.lock (the file env/shell installs with `uv sync --locked`), each fetched by
      # its URL and sha256; only the interpreter comes from nixpkgs (3.11, as on Debian 12).
      workspace = uv2nix.lib.workspace.loadWorkspace { workspaceRoot = ./.; };
      pythonSetFor = pkgs:
        (pkgs.callPackage pyproject-nix.build.packages { python = pkgs.python311; }).overrideScope
          (lib.composeManyExtensions [
            pyproject-build-systems.overlays.default
            (workspace.mkPyprojectOverlay { sourcePreference = "wheel"; })
          ]);
      pythonFor = pkgs: (pythonSetFor pkgs).mkVirtualEnv "streambench-env" workspace.deps.default;

      # Maven: env/maven-lock.json (written by `python -m env.mavenlock write`, checked by env/shell) lists
      # every jar, pom and tarball the build and the broker distributions read; one fixed-output fetch per
      # file makes the offline repository, and the versions of the ranges the build resolved become the
      # repository's metadata. No placeholder hash, no hash over a whole download.
      mavenLock = builtins.fromJSON (builtins.readFile ./env/maven-lock.json);
      mavenRepoFor = pkgs: pkgs.linkFarm "streambench-m2" (
        map (a: { name = a.path; path = pkgs.fetchurl { inherit (a) url sha256; }; }) mavenLock.artifacts
        ++ map
          (m: {
            name = "${m.path}/maven-metadata-central.xml";
            path = pkgs.writeText "maven-metadata.xml" ''
              <?xml version="1.0" encoding="UTF-8"?>
              <metadata><groupId>${m.groupId}</groupId><artifactId>${m.artifactId}</artifactId><versioning><versions>${
                lib.concatMapStrings (v: "<version>${v}</version>") m.versions
              }</versions></versioning></metadata>
            '';
          })
          mavenLock.metadata
      );

      # Exports the environment of CONTRIBUTING.md, as env/shell does.
      shellHook = ''
        export STREAMBENCH_ROOT="$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
        export STREAMBENCH_CACHE="''${STREAMBENCH_CACHE:-$STREAMBENCH_ROOT/.cache}"
        export MAVEN_OPTS="''${MAVEN_OPTS:+$MAVEN_OPTS }-Dmaven.repo.local=$STREAMBENCH_CACHE/m2"
        export PYTHONPATH="$STREAMBENCH_ROOT:$STREAMBENCH_ROOT/hw-probes''${PYTHONPATH:+:$PYTHONPATH}"
        # `snakemake --profile NAME` finds env/profiles/NAME through <XDG_CONFIG_DIRS[0]>/snakemake
        export XDG_CONFIG_DIRS="$STREAMBENCH_ROOT/env/xdg:''${XDG_CONFIG_DIRS:-/etc/xdg}"
        export QUARTO_PYTHON="$(command -v python3)"
        # the date generated files record (the paper's PDF): the last commit's, as in env/shell
        export SOURCE_DATE_EPOCH="''${SOURCE_DATE_EPOCH:-$(git -C "$STREAMBENCH_ROOT" log -1 --format=%ct 2>/dev/null || echo 0)}"
      '';

      # A Maven step run offline on the locked repository (a writable copy: Maven records what it resolved).
      mavenStep = pkgs: { pname, mvnArgs, install }:
        pkgs.stdenvNoCC.mkDerivation {
          inherit pname src;
          version = "0.1.0";
          nativeBuildInputs = [ pkgs.maven pkgs.jdk17 ];
          buildPhase = ''
            runHook preBuild
            export HOME=$TMPDIR
            cp -rL ${mavenRepoFor pkgs} $TMPDIR/m2 && chmod -R u+w $TMPDIR/m2
            mvn -B -o -Dstyle.color=never -Dmaven.repo.local=$TMPDIR/m2 ${mvnArgs}
            runHook postBuild
          '';
          installPhase = ''
            runHook preInstall
            ${install}
            runHook postInstall
          '';
        };
    in
    {
      devShells = forAllSystems (pkgs: {
        default = pkgs.mkShell {
          packages = with pkgs; [
            (pythonFor pkgs)
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
            fuse3
          ];
          # systems/faultfs.py: mfusepy loads libfuse3 with ctypes, which finds no library in the Nix store itself
          FUSE_LIBRARY_PATH = "${pkgs.fuse3.out}/lib/libfuse3.so.3";
          inherit shellHook;
        };
      });

      packages = forAllSystems (pkgs: {
        # the same goals as env/test (runner) and `python -m systems prepare` (the distributions)
        runner = mavenStep pkgs {
          pname = "streambench-runner";
          mvnArgs = "-f runner/pom.xml package -DskipTests";
          install = "mkdir -p $out/share/streambench/runner && cp -r runner/target runner/bin $out/share/streambench/runner/";
        };
        kafka-dist = mavenStep pkgs {
          pname = "streambench-kafka-dist";
          mvnArgs = "-f systems/kafka/pom.xml dependency:copy-dependencies -DoutputDirectory=$TMPDIR/kafka/libs";
          install = "cp -r $TMPDIR/kafka $out";
        };
        pulsar-dist = mavenStep pkgs {
          pname = "streambench-pulsar-dist";
          mvnArgs = "-f systems/pulsar/pom.xml dependency:copy@fetch-dist -Dpulsar.dist.dir=$TMPDIR/dl";
          install = "mkdir -p $out && tar -xzf $TMPDIR/dl/apache-pulsar-*-bin.tar.gz -C $out --strip-components=1";
        };
        # Pravega's jars plus the loopback patch classes compiled against them (as `python -m systems prepare pravega`)
        pravega-dist = mavenStep pkgs {
          pname = "streambench-pravega-dist";
          mvnArgs = "-f systems/pravega/pom.xml dependency:copy-dependencies -DoutputDirectory=$TMPDIR/pravega/libs";
          install = "javac -nowarn --release 17 -cp \"$TMPDIR/pravega/libs/*\" -d $TMPDIR/pravega/patch $(find systems/pravega/patch -name '*.java') && cp -r $TMPDIR/pravega $out";
        };
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
            nativeBuildInputs = [ (pythonFor pkgs) pkgs.git ];
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
