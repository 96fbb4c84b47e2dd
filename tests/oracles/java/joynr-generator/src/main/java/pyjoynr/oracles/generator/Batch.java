package pyjoynr.oracles.generator;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import org.eclipse.emf.ecore.resource.Resource;

import io.joynr.generator.Executor;
import io.joynr.generator.loading.ModelLoader;
import io.joynr.generator.util.InvocationArguments;

/**
 * Runs joynr's generator on many models in one JVM (a JVM start and the generator's set-up cost
 * more than a model's generation). The one argument is the generation language; each line of
 * standard input is one job, three fields split by tabs: the model (a file or folder), the
 * output folder and the addVersionTo mode. Per job it prints a line "ORACLE-JOB model" before,
 * then "ORACLE-REFUSED model" with the loader's errors when the model does not load (joynr's
 * Executor would end the JVM there), "ORACLE-FAILED model" with the exception when generating
 * throws, or "ORACLE-GENERATED model"; whatever joynr's generator logs comes between.
 */
public final class Batch {

    private Batch() {
    }

    public static void main(String[] args) throws Exception {
        String language = args[0];
        BufferedReader input = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        List<String[]> jobs = new ArrayList<>();
        for (String line = input.readLine(); line != null; line = input.readLine()) {
            if (!line.isBlank()) {
                jobs.add(line.split("\t", -1));
            }
        }
        for (String[] job : jobs) {
            String model = job[0];
            System.out.println("ORACLE-JOB " + model);
            StringBuilder errors = new StringBuilder();
            for (Resource resource : new ModelLoader(model).getResources()) {
                for (Resource.Diagnostic error : resource.getErrors()) {
                    errors.append(' ').append(resource.getURI()).append(": ").append(error.getMessage());
                }
            }
            if (errors.length() > 0) {
                System.out.println("ORACLE-REFUSED " + model + errors.toString().replace('\n', ' '));
                System.out.flush();
                continue;
            }
            InvocationArguments arguments = new InvocationArguments(new String[]{ "-modelpath", model,
                    "-outputPath", job[1], "-generationLanguage", language, "-addVersionTo", job[2] });
            try {
                new Executor(arguments).generate();
                System.out.println("ORACLE-GENERATED " + model);
            } catch (Exception e) {
                System.out.println("ORACLE-FAILED " + model + " " + String.valueOf(e).replace('\n', ' '));
            }
            System.out.flush();
        }
    }
}
