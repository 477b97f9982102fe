#!/usr/bin/env bash
# Build the Jackson variant of the Java SUT (sut-java/jackson/: Jackson reads and writes every JSON text) into
# sut-java/build/vbench-sut-jackson.jar, with the JDK alone against Debian's jars (libjackson2-databind-java).
#   java -jar build/vbench-sut-jackson.jar --jackson defaults,indent --port-file /tmp/sut.port
set -euo pipefail
cd "$(dirname "$0")"
JAVA_LIB="${VBENCH_JAVA_LIB:-/usr/share/java}"
JARS=(gson.jar sqlite-jdbc.jar jackson-core.jar jackson-databind.jar jackson-annotations.jar)
for jar in "${JARS[@]}"; do
  [[ -f "$JAVA_LIB/$jar" ]] || { echo "missing $JAVA_LIB/$jar (apt-get install libgoogle-gson-java libxerial-sqlite-jdbc-java libjackson2-databind-java)" >&2; exit 3; }
done
CP=$(printf "$JAVA_LIB/%s:" "${JARS[@]}")
rm -rf build/jackson-classes && mkdir -p build/jackson-classes
javac --release 17 -Xlint:all -Werror -encoding UTF-8 -d build/jackson-classes -cp "${CP%:}" \
  $(find src jackson/src -name '*.java' | sort)
cp -r resources/. build/jackson-classes/
printf 'Main-Class: vbench.sut.JacksonSut\nClass-Path: %s\n' "$(printf "file:$JAVA_LIB/%s " "${JARS[@]}")" > build/jackson-manifest.txt
jar --create --file build/vbench-sut-jackson.jar --manifest build/jackson-manifest.txt -C build/jackson-classes .
echo "built $(pwd)/build/vbench-sut-jackson.jar"
