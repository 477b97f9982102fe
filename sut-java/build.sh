#!/usr/bin/env bash
# Build the Java SUT with the JDK alone (javac + jar, no Maven or Gradle) into sut-java/build/vbench-sut.jar.
# Gson and sqlite-jdbc come from Debian (libgoogle-gson-java, libxerial-sqlite-jdbc-java); the jar's manifest
# names them on its class path, so `java -jar build/vbench-sut.jar` runs it.
set -euo pipefail
cd "$(dirname "$0")"
JAVA_LIB="${VBENCH_JAVA_LIB:-/usr/share/java}"
for jar in gson.jar sqlite-jdbc.jar; do
  [[ -f "$JAVA_LIB/$jar" ]] || { echo "missing $JAVA_LIB/$jar (apt-get install libgoogle-gson-java libxerial-sqlite-jdbc-java)" >&2; exit 3; }
done
rm -rf build/classes && mkdir -p build/classes
javac --release 17 -Xlint:all -Werror -encoding UTF-8 -d build/classes \
  -cp "$JAVA_LIB/gson.jar:$JAVA_LIB/sqlite-jdbc.jar" $(find src -name '*.java' | sort)
cp -r resources/. build/classes/
printf 'Main-Class: vbench.sut.SutServer\nClass-Path: %s %s\n' \
  "file:$JAVA_LIB/gson.jar" "file:$JAVA_LIB/sqlite-jdbc.jar" > build/manifest.txt
jar --create --file build/vbench-sut.jar --manifest build/manifest.txt -C build/classes .
echo "built $(pwd)/build/vbench-sut.jar"
