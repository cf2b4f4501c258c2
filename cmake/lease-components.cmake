# lease-components.cmake — what the build and the installed package config
# share about lease's optional components: how to find a component's
# dependencies (components/<name>.cmake), and the placeholder target that
# stands in for a component that was not asked for or not found, so that
# using it fails with a sentence instead of "target not found".

# lease_find_component_deps(<name> <out-var>): sets <out-var> to "" when the
# dependencies of component <name> are found, else to a sentence naming
# what is missing (and its Debian package).
set(_lease_components_dir "${CMAKE_CURRENT_LIST_DIR}/components")
macro(lease_find_component_deps name out)
  set(_lease_missing "")
  include("${_lease_components_dir}/${name}.cmake")
  set(${out} "${_lease_missing}")
endmacro()

# lease_placeholder(<name> <why> [IMPORTED]): defines lease::<name> as an
# empty target whose use is reported at the end of configuration with <why>.
# IMPORTED: in a user's project (the package config); else in lease's build.
function(lease_placeholder name why)
  if(TARGET lease::${name})
    return()
  endif()
  if("IMPORTED" IN_LIST ARGN)
    add_library(lease::${name} INTERFACE IMPORTED)
    set(real lease::${name})
  else()
    add_library(lease_${name} INTERFACE)
    add_library(lease::${name} ALIAS lease_${name})
    set(real lease_${name})
  endif()
  set_target_properties(${real} PROPERTIES LEASE_UNAVAILABLE "${why}")
  set_property(GLOBAL APPEND PROPERTY LEASE_PLACEHOLDERS lease::${name})
  set_property(GLOBAL PROPERTY LEASE_UNAVAILABLE_${name} "${why}")
  get_property(deferred GLOBAL PROPERTY LEASE_PLACEHOLDER_CHECK)
  if(NOT deferred)
    set_property(GLOBAL PROPERTY LEASE_PLACEHOLDER_CHECK TRUE)
    cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _lease_check_placeholders)
  endif()
endfunction()

# Runs once the top directory is configured: any target that links a
# placeholder stops the configuration with the placeholder's sentence.
function(_lease_check_placeholders)
  get_property(placeholders GLOBAL PROPERTY LEASE_PLACEHOLDERS)
  set(dirs "${CMAKE_SOURCE_DIR}")
  set(errors "")
  while(dirs)
    list(POP_FRONT dirs dir)
    get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
    list(APPEND dirs ${subdirs})
    get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
    foreach(t IN LISTS targets)
      get_target_property(type ${t} TYPE)
      set(links "")
      if(NOT type STREQUAL "INTERFACE_LIBRARY")
        get_target_property(links ${t} LINK_LIBRARIES)
      endif()
      get_target_property(ilinks ${t} INTERFACE_LINK_LIBRARIES)
      foreach(p IN LISTS placeholders)
        string(REPLACE "lease::" "" name "${p}")
        if(t STREQUAL "lease_${name}")
          continue()
        endif()
        foreach(l IN LISTS links ilinks)
          if(l MATCHES "(^|[<:,;])${p}(>|$)")
            get_property(why GLOBAL PROPERTY LEASE_UNAVAILABLE_${name})
            string(APPEND errors "target \"${t}\" links ${p}, but ${why}\n")
            break()
          endif()
        endforeach()
      endforeach()
    endforeach()
  endwhile()
  if(errors)
    message(FATAL_ERROR "${errors}")
  endif()
endfunction()
